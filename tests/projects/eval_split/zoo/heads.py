from models import DropNet


class Head(DropNet):
    """Inherits DropNet's Dropout from another module."""
