"""TorchTrap: finds the silent PyTorch bugs that corrupt training without an error."""

from torchtrap.findings import Applicability, Edit, Finding, Fix, Position, Range, Severity

__version__ = "0.1.0"

HOMEPAGE = "https://github.com/torchtrap/torchtrap"
# Where docs/rules/TTNNN.md is published; the LSP's docsBaseUrl overrides it.
RULE_DOCS_URL = f"{HOMEPAGE}/blob/main/docs/rules/"

__all__ = [
    "Applicability",
    "Edit",
    "Finding",
    "Fix",
    "Position",
    "Range",
    "HOMEPAGE",
    "RULE_DOCS_URL",
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
