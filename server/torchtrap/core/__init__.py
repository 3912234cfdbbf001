"""The interprocedural core: a points-to model and call graph of a program."""

from torchtrap.core.analysis import Analysis, analyse, analyse_paths

__all__ = ["Analysis", "analyse", "analyse_paths"]
