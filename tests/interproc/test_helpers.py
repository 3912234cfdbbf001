"""The ``reveal`` helper itself: order, descriptions, and "unknown"."""

from __future__ import annotations

from pathlib import Path

from tests.interproc.helpers import analyse_project, reveal, reveal_calls

MANY = 60  # more objects than a node keeps (the core's MAX_OBJECTS is 48)


def test_reveal_order_descriptions_and_unknown(tmp_path: Path) -> None:
    classes = "".join(f"class C{i}:\n    pass\n\n\n" for i in range(MANY))
    items = ", ".join(f"C{i}()" for i in range(MANY))
    analysis = analyse_project(
        tmp_path,
        {
            "b.py": classes + f"items = [{items}]\nreveal(items[5])\nfor x in items:\n"
            "    reveal(x)\n",
            "a.py": "import b\nimport torch\n\nreveal(b.C1())\nreveal(undefined_name)\n"
            "reveal(torch.zeros(2).cuda())\nreveal(torch.zeros)\n",
            "pkg/z.py": "reveal(4)\nreveal([1])\n",
        },
    )
    assert [(r.module, r.line) for r in reveal_calls(analysis)] == [
        ("a", 4),
        ("a", 5),
        ("a", 6),
        ("a", 7),
        ("b", 242),
        ("b", 244),
        ("pkg.z", 1),
        ("pkg.z", 2),
    ]
    assert reveal(analysis) == [
        {"Inst:C1@a:4"},
        set(),  # bound nowhere: nothing, not a guess
        {"call:.cuda"},
        {"ext:torch.zeros"},
        {"Inst:C5@b:241"},
        None,  # iterating 60 kinds of object: past the cap, unknown
        {"const:4"},
        {"list@pkg.z:2"},
    ]
