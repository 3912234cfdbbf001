"""Inputs for the fuzz tests: the repo's own code (examples/, every rule's
valid and invalid examples) mutated the ways real files and editors break
it, grammar-generated programs (hypothesmith), and raw bytes.

The hypothesis profile is chosen by ``TORCHTRAP_FUZZ_PROFILE``: ``ci`` (the
default, bounded for the normal suite) or ``long`` (``scripts/fuzz.sh``).
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from torchtrap.rules import ALL_RULES

ROOT = Path(__file__).resolve().parents[2]

settings.register_profile(
    "torchtrap-ci",
    max_examples=200,
    deadline=None,
    derandomize=True,  # the normal suite must not turn red by chance
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)
settings.register_profile(
    "torchtrap-long",
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
PROFILE = settings.get_profile(f"torchtrap-{os.environ.get('TORCHTRAP_FUZZ_PROFILE', 'ci')}")


def scaled(share: float) -> settings:
    """The profile with ``share`` of its examples (for the slower properties)."""
    return settings(PROFILE, max_examples=max(5, int(PROFILE.max_examples * share)))


def _seeds() -> list[str]:
    """Every module the repo itself ships as an example of (in)correct code.
    Read at import time, so rules added to ALL_RULES are fuzzed too."""
    seeds = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "examples").glob("*.py"))]
    for rule in ALL_RULES:
        for example in (*rule.valid, *rule.invalid):
            seeds.append(textwrap.dedent(example.code))
    return seeds


SEEDS = _seeds()

# Statement-level pitfalls (from the invalid examples) to splice in anywhere.
SNIPPETS = sorted(
    {
        line.strip()
        for rule in ALL_RULES
        for example in rule.invalid
        for line in textwrap.dedent(example.code).split("\n")
        if line.strip() and not line.strip().startswith("#")
    }
)

# Names that are valid identifiers outside ASCII, and characters that are not.
IDENTIFIERS = ["数据", "données", "x̄", "ℌ", "ｆｕｌｌ", "データセット", "_𝔡"]
ODD_TEXT = ["🔥", "\t", "\x0c", "\u2028", "\ufeff", "\x00", "\r", "\\", "'''", '"', "(", ")", ":"]
INDENTS = ["", "    ", "        ", "\t", "  ", "\t    ", " "]


@st.composite
def mutated_source(draw: st.DrawFn) -> str:
    """A seed with one to five mutations applied."""
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 5))):
        text = draw(_mutation(text))
    return text


def _mutation(text: str) -> st.SearchStrategy[str]:
    lines = text.split("\n")
    n = len(lines)
    index = st.integers(0, max(n - 1, 0))
    offset = st.integers(0, len(text))

    def delete(i: int) -> str:
        return "\n".join(lines[:i] + lines[i + 1 :])

    def duplicate(i: int) -> str:
        return "\n".join(lines[: i + 1] + lines[i:])

    def swap(ij: tuple[int, int]) -> str:
        i, j = ij
        out = list(lines)
        out[i], out[j] = out[j], out[i]
        return "\n".join(out)

    def insert(args: tuple[int, str, str]) -> str:
        i, indent, snippet = args
        return "\n".join([*lines[:i], indent + snippet, *lines[i:]])

    def insert_aligned(args: tuple[int, str]) -> str:
        # At the indentation the line there has (one level deeper after a
        # ":"), so that the program most often still parses and gets linted.
        i, snippet = args
        above = next((line for line in reversed(lines[:i]) if line.strip()), "")
        indent = above[: len(above) - len(above.lstrip())]
        if above.rstrip().endswith(":"):
            indent += "    "
        return "\n".join([*lines[:i], indent + snippet, *lines[i:]])

    def at_offset(args: tuple[int, str]) -> str:
        i, piece = args
        return text[:i] + piece + text[i:]

    def line_endings(ending: str) -> str:
        return text.replace("\n", ending)

    def rename(args: tuple[int, str]) -> str:
        # Replace one identifier-looking word with a non-ASCII identifier.
        words = sorted({w for w in _words(text) if not w.startswith("__")})
        if not words:
            return text
        i, name = args
        word = words[i % len(words)]
        return text.replace(word, name)

    return st.one_of(
        index.map(delete),
        index.map(duplicate),
        st.tuples(index, index).map(swap),
        st.tuples(
            st.integers(0, n), st.sampled_from(INDENTS), st.sampled_from(SNIPPETS or ["pass"])
        ).map(insert),
        st.tuples(st.integers(0, n), st.sampled_from(SNIPPETS or ["pass"])).map(insert_aligned),
        st.tuples(st.integers(0, n), st.sampled_from(SNIPPETS or ["pass"])).map(insert_aligned),
        offset.map(lambda i: text[:i]),  # truncated (a save mid-write, a paste)
        st.tuples(offset, st.sampled_from(ODD_TEXT) | st.text(max_size=3)).map(at_offset),
        st.sampled_from(["\r\n", "\r", "\n\r", "\r\r\n"]).map(line_endings),
        st.just("\ufeff" + text),
        st.just(text.replace("    ", "\t")),
        st.tuples(st.integers(0, 1000), st.sampled_from(IDENTIFIERS)).map(rename),
    )


@st.composite
def pitfall_programs(draw: st.DrawFn) -> str:
    """A seed with pitfall statements spliced in at matching indentation and
    layout changes that keep it valid: most of these parse and have findings
    with fixes (the mutated sources above are mostly broken code)."""
    lines = draw(st.sampled_from(SEEDS)).split("\n")
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(lines)))
        above = next((line for line in reversed(lines[:i]) if line.strip()), "")
        indent = above[: len(above) - len(above.lstrip())]
        if above.rstrip().endswith(":"):
            indent += "    "
        lines.insert(i, indent + draw(st.sampled_from(SNIPPETS or ["pass"])))
    text = "\n".join(lines)
    if draw(st.booleans()):
        text = text.replace("    ", "\t")
    return text.replace("\n", draw(st.sampled_from(["\n", "\r\n", "\r"])))


def _words(text: str) -> list[str]:
    import re

    return re.findall(r"\b[A-Za-z_][A-Za-z_0-9]{2,}\b", text)[:200]


@st.composite
def mutated_bytes(draw: st.DrawFn) -> bytes:
    """A mutated seed as bytes, with random bytes, a BOM or a coding cookie."""
    data = draw(mutated_source()).encode("utf-8", "surrogatepass")
    i = draw(st.integers(0, len(data)))
    extra = draw(
        st.sampled_from(
            [b"\xef\xbb\xbf", b"\x00", b"\xff\xfe", b"\x80", b"# -*- coding: latin-1 -*-\n"]
        )
        | st.binary(max_size=8)
    )
    return data[:i] + extra + data[i:]


@st.composite
def cells(draw: st.DrawFn) -> list[str]:
    """A mutated seed cut into notebook cells (with an IPython line or two)."""
    text = draw(mutated_source())
    lines = text.split("\n")
    cuts = sorted(draw(st.lists(st.integers(0, len(lines)), max_size=4)))
    out, last = [], 0
    for cut in [*cuts, len(lines)]:
        out.append("\n".join(lines[last:cut]))
        last = cut
    if draw(st.booleans()):
        out.insert(draw(st.integers(0, len(out))), "%matplotlib inline\n!pip list")
    return out
