"""Bad input stays bounded: recursion, long chains, huge classes, star
imports and import cycles give UNKNOWN (or the right answer), never a
traceback. Time is the benchmarks' business; these check the answers."""

from __future__ import annotations

from pathlib import Path

from tests.values.helpers import probes, project_probes


def test_a_function_passing_its_parameter_to_itself() -> None:
    (value,) = probes(
        """
        import torch

        def f(p):
            probe(p)
            return f(p)

        f(f(torch.softmax(x, 1)))
        """
    )
    assert value.bare_probability() is None  # one caller passes f(...): unknown


def test_a_chain_of_ten_thousand_names_ends_unknown_past_the_cut_off() -> None:
    lines = ["import torch", "v0 = torch.softmax(x, 1)"]
    lines += [f"v{i} = v{i - 1}" for i in range(1, 10_000)]
    lines.append("probe(v9999)")
    lines.append("probe(v3)")
    far, near = probes("\n".join(lines))
    assert not far.known
    assert near.bare_probability() is not None


def test_ten_thousand_functions_and_a_class_assigning_one_attribute_500_times() -> None:
    functions = [f"def f{i}(p):\n    return f{i + 1}(p)\n" for i in range(10_000)]
    assigns = "\n".join(f"        self.x = torch.sigmoid(z{i})" for i in range(500))
    code = (
        "import torch\n"
        + "".join(functions)
        + "class M:\n    def __init__(self):\n"
        + assigns
        + "\n    def g(self):\n        probe(self.x)\n"
        + "probe(f0(torch.sigmoid(z)))\n"
    )
    attribute, chained = probes(code)
    assert attribute.bare_probability() is not None  # all 500 agree
    assert not chained.known


def test_star_imports_and_an_import_cycle(tmp_path: Path) -> None:
    files = {
        "a.py": """
            import torch
            from b import *

            def probs(z):
                return torch.sigmoid(z)
        """,
        "b.py": """
            from a import *
            from c import helper
        """,
        "c.py": """
            from b import *
        """,
        "main.py": """
            from b import probs, missing
            from c import helper

            probe(probs(z))
            probe(missing(z))
            probe(helper(z))
        """,
    }
    found, missing, cyclic = project_probes(files, "main.py", tmp_path)
    assert found.bare_probability() is not None
    assert not missing.known
    assert not cyclic.known
