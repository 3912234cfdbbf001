"""The language server's document model under random incremental edits:
mixed line endings (lone "\\r" included), wide characters, positions inside
a character or past the end. Each change must give the text a reference
model (written here from the LSP spec, independent of the server) gives."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from lsprotocol import types

from tests.fuzz.strategies import scaled
from torchtrap.lsp.documents import TextDocument
from torchtrap.lsp.positions import UTF8, UTF16, UTF32

CODEC = {UTF8: ("utf-8", 1), UTF16: ("utf-16-le", 2), UTF32: ("utf-32-le", 4)}
TEXT = st.text(alphabet=st.sampled_from(list("ab \t:#\r\n中é🔥\x0c\u2028")), max_size=40)


def reference_offset(text: str, line: int, character: int, encoding: str) -> int:
    starts, i = [0], 0
    while i < len(text):
        if text[i] == "\r" and text[i + 1 : i + 2] == "\n":
            i += 1
        if text[i] in "\r\n":
            starts.append(i + 1)
        i += 1
    if line >= len(starts):
        return len(text)
    end = starts[line + 1] if line + 1 < len(starts) else len(text)
    content = text[starts[line] : end].rstrip("\r\n")
    codec, width = CODEC[encoding]
    for index in range(len(content) + 1):  # a position inside a character: after it
        if len(content[:index].encode(codec, "surrogatepass")) // width >= character:
            return starts[line] + index
    return starts[line] + len(content)


position = st.tuples(st.integers(0, 8), st.integers(0, 12))


@scaled(1.0)
@given(
    TEXT,
    st.sampled_from([UTF8, UTF16, UTF32]),
    st.lists(st.tuples(position, position, TEXT), min_size=1, max_size=6),
)
def test_incremental_changes_match_the_reference(
    text: str, encoding: str, changes: list[tuple[tuple[int, int], tuple[int, int], str]]
) -> None:
    doc = TextDocument("file:///fuzz.py", text, 1)
    expected = text
    for (l1, c1), (l2, c2), new in changes:
        start = reference_offset(expected, l1, c1, encoding)
        end = max(reference_offset(expected, l2, c2, encoding), start)
        expected = expected[:start] + new + expected[end:]
        rng = types.Range(types.Position(l1, c1), types.Position(l2, c2))
        doc.apply(types.TextDocumentContentChangePartial(range=rng, text=new), encoding)
        assert doc.text == expected
