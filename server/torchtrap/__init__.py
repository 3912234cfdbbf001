"""TorchTrap: finds the silent PyTorch bugs that corrupt training without an error."""

from torchtrap.findings import Applicability, Edit, Finding, Fix, Position, Range, Severity

__version__ = "0.1.0"

__all__ = [
    "Applicability",
    "Edit",
    "Finding",
    "Fix",
    "Position",
    "Range",
    "Severity",
    "__version__",
    "lint",
]


def __getattr__(name: str) -> object:
    # Lazy so that `import torchtrap` (e.g. by the probe) does not load every rule.
    if name == "lint":
        from torchtrap.engine import lint

        return lint
    raise AttributeError(name)
