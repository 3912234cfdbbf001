"""The hooks' object walk (runtime_hooks/walk.py) in-process: cycle-safe,
bounded, reads only stored state. The predicate here is a plain marker
class: what the run looks for (CUDA tensors, generators) is tested through
the CLI in test_run_checks.py."""

from __future__ import annotations

import functools

import pytest

from torchtrap.runtime_hooks import walk as walker


class Target:
    pass


class Node:
    def __init__(self, **kw: object) -> None:
        self.__dict__.update(kw)


class Trap:
    """Reading anything but the stored state raises."""

    def __init__(self, held: object) -> None:
        self.held = held

    @property
    def prop(self) -> object:
        raise AssertionError("a property was read")

    def __getattr__(self, name: str) -> object:
        raise AssertionError(f"__getattr__({name}) was called")


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a: object) -> None:
        self.a = a  # b stays empty


def paths(root: object, **kw: object) -> list[str]:
    return [
        p
        for p, *_ in walker.walk(
            [("ds", root)], lambda o: isinstance(o, Target), lambda o: False, **kw
        )
    ]  # type: ignore[arg-type]


def test_finds_targets_through_every_kind_of_holder() -> None:
    t = [Target() for _ in range(7)]
    captured = t[2]

    def closure() -> object:
        return captured

    root = Node(
        a=[1, {"k": t[0]}],
        b=functools.partial(print, t[1], sep=t[6]),
        c=Node(fn=closure),
        d=Slotted(t[3]),
        e=Trap(t[4]),
        f=Node(method=Node(x=t[5]).__init__),
    )
    assert sorted(paths(root)) == sorted(
        [
            "ds.a[1]['k']",
            "ds.b.args[0]",
            "ds.b.keywords['sep']",
            "ds.c.fn<closure captured>",
            "ds.d.a",
            "ds.e.held",
            "ds.f.method.__self__.x",
        ]
    )


def test_each_object_once_and_cycles_end() -> None:
    t = Target()
    a = Node(t=t)
    b = Node(back=a, t=t)
    a.b = b  # type: ignore[attr-defined]
    a.me = a  # type: ignore[attr-defined]
    assert paths(a) == ["ds.t"]


def test_bounded_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(walker, "MAX_SECONDS", 60.0)  # the object bound, whatever the load
    stats = walker.Stats()
    big = [[Node(i=i) for i in range(1000)] for _ in range(100)]
    root = Node(big=big, t=Target())
    found = list(
        walker.walk([("ds", root)], lambda o: isinstance(o, Target), lambda o: False, stats)
    )
    assert [p for p, *_ in found] == ["ds.t"]  # breadth first: found before the limit
    assert stats.objects <= walker.MAX_OBJECTS + 1
    assert stats.truncated == f"stopped after {walker.MAX_OBJECTS} objects"


def test_time_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(walker, "MAX_SECONDS", 0.0)
    stats = walker.Stats()
    root = [Node(i=i) for i in range(1000)]
    list(walker.walk([("ds", root)], lambda o: False, lambda o: False, stats))
    assert stats.truncated == "stopped after 0 s of CPU time" and stats.objects == 256


def test_container_items_are_capped_and_excluded_objects_skipped() -> None:
    t = Target()
    many = [Node() for _ in range(walker.MAX_ITEMS)] + [t]
    assert paths(Node(many=many)) == []
    shared = Node(t=t)
    assert paths(Node(data_source=shared)) == ["ds.data_source.t"]
    assert paths(Node(data_source=shared), exclude=(shared,)) == []


def test_owner_and_attribute_of_a_hit() -> None:
    t = Target()
    holder = Node(rng=t)
    ((path, obj, owner, attr),) = walker.walk(
        [("ds", Node(transform=holder))], lambda o: isinstance(o, Target), lambda o: False
    )
    assert (path, obj, owner, attr) == ("ds.transform.rng", t, holder, "rng")
