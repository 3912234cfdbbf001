"""One memo for the layer's depth-bounded questions (``Values.of``, the
DataLoader evidence), such that no answer depends on which questions (which
rules) were asked before.

A naive memo keeps whatever the first question computed: a value reached 9
steps deep inside one rule's question, cut off at the 10-step limit, was then
the answer to a later question that asks about it directly, and a value
computed inside a cycle kept the cycle's placeholder. Here an answer is kept
across questions only when it met neither the cut-off nor a cycle, together
with the number of steps it took, and is reused only where those steps still
fit under the limit (else it is computed again, and meets the cut-off as a
fresh computation would). Every other answer is kept until the current
question is answered, so that one question still costs each node once.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")


class DepthMemo(Generic[T]):
    def __init__(self, limit: int, unknown: T) -> None:
        self.limit = limit
        self.unknown = unknown  # the answer past the cut-off and inside a cycle
        self._kept: dict[Hashable, tuple[T, int]] = {}
        self._partial: dict[Hashable, T] = {}
        self._active: set[Hashable] = set()
        self._incomplete = False  # the answer being built met a cut-off or a cycle
        self._reach = 0  # the deepest step the answer being built took

    def answer(self, key: Hashable, depth: int, compute: Callable[..., T], *args: object) -> T:
        """``compute(*args)``, asked ``depth`` steps into a question."""
        if depth > self.limit:
            self._incomplete = True
            return self.unknown
        kept = self._kept.get(key)
        if kept is not None and depth + kept[1] <= self.limit:
            if depth + kept[1] > self._reach:
                self._reach = depth + kept[1]
            return kept[0]
        if key in self._partial:
            self._incomplete = True
            return self._partial[key]
        if key in self._active:
            self._incomplete = True
            return self.unknown
        outer_incomplete, outer_reach = self._incomplete, self._reach
        self._incomplete, self._reach = False, depth
        self._active.add(key)
        try:
            value = compute(*args)
            if self._incomplete:
                self._partial[key] = value
            else:
                self._kept[key] = (value, self._reach - depth)
        finally:
            self._active.discard(key)
            self._incomplete = outer_incomplete or self._incomplete
            self._reach = max(outer_reach, self._reach)
            if not self._active:  # the question is answered (or raised)
                self._partial.clear()
                self._incomplete, self._reach = False, 0
        return value
