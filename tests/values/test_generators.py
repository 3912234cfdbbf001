"""Random generators as a value kind (Kind.RNG): the constructor table of
torchtrap.facts.generators through names, branches and alternatives."""

from __future__ import annotations

from tests.values.helpers import probes
from torchtrap.values import Certainty, Kind


def test_constructors_are_generators() -> None:
    values = probes(
        """
        import random
        import numpy as np
        import torch
        from numpy.random import default_rng
        probe(np.random.default_rng(0))
        probe(default_rng())
        probe(np.random.RandomState(1))
        probe(np.random.Generator(np.random.PCG64()))
        probe(random.Random(3))
        probe(torch.Generator())
        probe(torch.Generator().manual_seed(0))
        """
    )
    families = [v.generator.family if v.generator else None for v in values]
    assert all(v.kind is Kind.RNG and v.definite for v in values)
    assert families == [
        "numpy.random.default_rng",
        "numpy.random.default_rng",
        "numpy.random.RandomState",
        "numpy.random.default_rng",
        "random.Random",
        "torch.Generator",
        "torch.Generator",
    ]


def test_near_misses_are_not_generators() -> None:
    values = probes(
        """
        import numpy as np
        import torch
        probe(np.random.rand(3))
        probe(np.random.default_rng)
        probe(torch.manual_seed(0))
        probe(make().manual_seed(0))
        """
    )
    assert [v.kind is Kind.RNG for v in values] == [False, False, False, False]


def test_a_name_assigned_one_on_every_path_is_definite() -> None:
    (value,) = probes(
        """
        import numpy as np
        def f(seed):
            if seed is None:
                rng = np.random.default_rng()
            else:
                rng = np.random.default_rng(seed)
            probe(rng)
        """
    )
    assert value.kind is Kind.RNG and value.definite
    assert value.generator is not None and not value.generator.alternative


def test_a_name_that_is_a_generator_on_one_branch_only_is_may() -> None:
    (value,) = probes(
        """
        import numpy as np
        def f(seed, rng):
            if seed is not None:
                rng = np.random.default_rng(seed)
            probe(rng)
        """
    )
    assert value.kind is Kind.RNG and value.certainty is Certainty.MAY
    assert value.generator is not None and not value.generator.alternative


def test_one_operand_of_an_alternative_is_may_and_says_so() -> None:
    values = probes(
        """
        import numpy as np
        def f(rng, seed):
            probe(rng or np.random.default_rng())
            probe(np.random.default_rng(seed) if seed else None)
        """
    )
    for value in values:
        assert value.kind is Kind.RNG and value.certainty is Certainty.MAY
        assert value.generator is not None and value.generator.alternative


def test_a_generator_on_one_path_and_a_tensor_on_another_is_unknown() -> None:
    (value,) = probes(
        """
        import numpy as np
        import torch
        def f(c):
            if c:
                x = np.random.default_rng()
            else:
                x = torch.zeros(3)
            probe(x)
        """
    )
    assert value.kind is Kind.UNKNOWN


# -- constants (Values.constant) ------------------------------------------------


def _constants(code: str) -> list[object]:

    from tests.values.helpers import probe_calls

    ctx, calls = probe_calls(code)
    out: list[object] = []
    for call in calls:
        value = ctx.values.constant(call.args[0])
        if value.kind is Kind.CONSTANT:
            assert value.constant is not None
            out.append(value.constant.value)
        else:
            out.append(None)
    return out


def test_a_name_bound_once_to_a_literal_is_a_constant() -> None:
    assert _constants(
        """
        WORKERS = 4
        def f():
            n = 2
            probe(n)
            probe(WORKERS)
            probe(3)
        """
    ) == [2, 4, 3]


def test_a_reassigned_name_is_not_a_single_constant() -> None:
    assert _constants(
        """
        import os
        def f(args):
            n = 2
            if args.many:
                n = 8
            probe(n)
            m = os.cpu_count()
            probe(m)
            probe(args.workers)
        """
    ) == [None, None, None]


def test_assigned_is_the_last_assignment_before_the_use_else_the_first_after() -> None:
    import ast
    import textwrap

    from tests.values.helpers import _context

    code = textwrap.dedent(
        """
        def f(path):
            data = open(path)
            data = load(data)
            probe(data)
            for row in rows:
                probe(row)
            probe(late)
            late = 3
        """
    )
    ctx = _context(code, "example.py", None)
    fn = ctx.tree.body[0]
    names = [
        n.args[0]
        for n in ast.walk(ctx.tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "probe"
    ]
    names.sort(key=lambda n: n.lineno)
    found = [ctx.values.assigned(n, fn) for n in names if isinstance(n, ast.Name)]
    assert [ast.unparse(v) if v is not None else None for v in found] == ["load(data)", None, "3"]
