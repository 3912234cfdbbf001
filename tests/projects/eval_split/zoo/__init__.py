from .heads import Head

__all__ = ["Head"]
