"""What the value layer's own analyses (autograd, devices, loops) read of a
module's :class:`~torchtrap.values.evaluate.Values`.

``Values`` builds those analyses and they ask it back; typing them against
these Protocols keeps them from importing ``evaluate`` (a type-only import
is still a cycle: both modules change together)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from torchtrap.facts import ModuleFacts
    from torchtrap.facts.imports import ImportTable
    from torchtrap.facts.tensors import TensorFacts
    from torchtrap.project.index import Project
    from torchtrap.values.loaders import LoaderEvidence, Loaders
    from torchtrap.values.model import Value
    from torchtrap.values.models import ModelFacts


class Context(Protocol):
    """What the layer reads of a rule's context (rules.base.Context)."""

    path: str
    tree: ast.Module
    facts: ModuleFacts

    @property
    def text(self) -> str: ...

    @property
    def project(self) -> Project | None: ...


class GraphQueries(Protocol):
    """The autograd question the loop walk asks (values.autograd.AutogradFacts)."""

    def in_graph(self, expr: ast.expr, at: ast.AST, depth: int = 0) -> bool: ...


class ValueLayer(Protocol):
    """One module's value layer, as its own analyses see it."""

    path: str
    facts: ModuleFacts
    imports: ImportTable
    tensors: TensorFacts

    @property
    def project(self) -> Project | None: ...

    @property
    def loaders(self) -> Loaders: ...

    @property
    def models(self) -> ModelFacts: ...

    @property
    def autograd(self) -> GraphQueries: ...

    def context(self) -> Context | None: ...

    def of(self, expr: ast.expr, at: ast.AST | None = None) -> Value: ...

    def dataloader(self, expr: ast.expr, at: ast.AST | None = None) -> LoaderEvidence | None: ...
