from .crops import Crops

__all__ = ["Crops"]
