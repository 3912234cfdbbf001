from .data import Stream
from .loaders import make_loader

__all__ = ["Stream", "make_loader"]
