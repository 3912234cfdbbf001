from .streams import *  # noqa: F403
