"""app/protocol/jsonrpc: the relay's one strict reading of a client's text and the one line it writes
for the server: a value reads back as itself with the same types, what is not JSON is refused with
a parse error that says where, and a text too big to parse that is not JSON either is still a parse
error, not an invalid request."""

from __future__ import annotations

import json
import math
import sys
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st
from mcp_types import INVALID_REQUEST, PARSE_ERROR

from app.protocol.jsonrpc import FrameError, parse_client_text, parse_json, to_line

# Strings with what a reader can trip on: escapes, quotes, control characters, the two line
# separators JavaScript once took for line breaks, characters outside the BMP, and digits.
strings = st.text(
    alphabet=st.characters(exclude_categories=["Cs"])
    | st.sampled_from(list('"\\\n\t\x00\x1f\u2028\u2029😀0123456789')),
    max_size=24,
)
numbers = (
    st.integers()
    | st.integers(min_value=2**62, max_value=2**70)
    | st.integers(min_value=-(2**70), max_value=-(2**62))
    | st.floats(allow_nan=False, allow_infinity=False)
)
values = st.recursive(
    st.none() | st.booleans() | numbers | strings,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(strings, children, max_size=5),
    max_leaves=40,
)
# What a text is made of once it is damaged: JSON's own punctuation and the pieces of its literals.
damage = st.sampled_from(
    list('{}[],:"\\ -+.eE0123456789tfnaul\x00\t\ufeff') + ["NaN", "Infinity", "1e400", "\\ud800", "\\u"]
)


def same(a: Any, b: Any) -> bool:
    """Equal with the same types all the way down (1 is not 1.0, -0.0 is not 0.0), keys in order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return bool(a == b)


@settings(max_examples=400, deadline=None)
@given(values, st.sampled_from([None, 0, 2]), st.booleans())
def test_any_value_reads_as_itself_with_its_types(value: Any, indent: int | None, ascii_only: bool) -> None:
    read, error = parse_json(json.dumps(value, indent=indent, ensure_ascii=ascii_only))
    assert error is None and same(read, value)


@settings(max_examples=600, deadline=None)
@given(
    values, st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 2), damage), min_size=1, max_size=3)
)
def test_a_damaged_text_is_read_as_json_reads_it_or_refused_with_a_parse_error(
    value: Any, edits: list
) -> None:
    text = json.dumps(value)
    for at, kind, piece in edits:
        at %= len(text) + 1
        if kind == 0:
            text = text[:at] + piece + text[at:]
        elif kind == 1:
            text = text[:at] + text[at + 1 :]
        else:
            text = text[:at] + piece + text[at + 1 :]
    read, error = parse_json(text)
    if error is None:
        assert same(read, json.loads(text)), text
    else:
        assert read is None and error.code == PARSE_ERROR and error.reason, text


@settings(max_examples=300, deadline=None)
@given(values)
def test_a_line_written_reads_back_as_the_same_value(value: Any) -> None:
    line = to_line(value)
    assert "\n" not in line and "\u2028" not in line and "\u2029" not in line
    assert same(json.loads(line), value)


@example(10**30)
@example(-(2**63) - 1)
@example(2**64)
@example(18446744073709551615)
@given(st.integers(min_value=2**63, max_value=2**90) | st.integers(min_value=-(2**90), max_value=-(2**63)))
def test_an_integer_past_64_bits_stays_an_integer_as_an_id_and_on_the_line(big: int) -> None:
    text = json.dumps({"jsonrpc": "2.0", "id": big, "method": "ping"})
    frame = parse_client_text(text, 1 << 20)
    assert not isinstance(frame, FrameError), frame
    assert type(frame.message["id"]) is int and frame.message["id"] == big
    assert frame.line == text.replace(" ", "")


def test_deep_nesting_is_read_and_written_back_until_too_deep_to_read() -> None:
    for depth in (250, 600):
        value, error = parse_json("[" * depth + "]" * depth)
        assert error is None
        assert to_line(value) == "[" * depth + "]" * depth
    for depth in (1020, 50_000):
        error = parse_json("[" * depth + "]" * depth)[1]
        assert error is not None and error.code == PARSE_ERROR and error.reason == "nested too deeply"


def test_a_text_too_big_to_parse_is_a_parse_error_when_it_is_not_json_at_all() -> None:
    # Too many values to parse, and never closed: not JSON (-32700), not an invalid request (-32600).
    for text in ("[" * 100_000, "{" * 100_000, '["' + "[" * 100_000 + "]", "[[]," * 20_000):
        frame = parse_client_text(text, 1 << 20)
        assert isinstance(frame, FrameError) and frame.code == PARSE_ERROR, (text[:20], frame)
    # Well-formed but over the limit: an invalid request, as before; brackets inside strings do not count.
    for text in (
        "[" + ",".join(["[]"] * 20_000) + "]",
        '["' + "[" * 50_000 + '",' + ",".join(["{}"] * 20_000) + "]",
    ):
        frame = parse_client_text(text, 1 << 20)
        assert isinstance(frame, FrameError) and frame.code == INVALID_REQUEST, (text[:20], frame)


def test_a_refusal_says_why() -> None:
    for text, reason in (
        ('{"a": NaN}', "NaN is not valid JSON"),
        ("[1e400]", "the number 1e400 is too large to represent"),
        ("\ufeff{}", "Unexpected UTF-8 BOM (decode using utf-8-sig) at line 1, column 1"),
        ('{"a": 1,}', "Expecting property name enclosed in double quotes at line 1, column 9"),
    ):
        value, error = parse_json(text)
        assert value is None and error is not None and error.reason == reason, (text, error)


def test_a_lone_surrogate_escape_is_read_and_then_refused() -> None:
    # It reads as JSON, but the line it would make cannot be UTF-8.
    value, error = parse_json('{"a": "\\ud800"}')
    assert error is None and value == {"a": "\ud800"}
    frame = parse_client_text(
        '{"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"a": "\\ud800"}}', 1 << 20
    )
    assert isinstance(frame, FrameError) and frame.reason == "a string holds an unpaired surrogate escape"


def test_reading_a_text_that_is_not_ascii_leaves_no_utf8_copy_inside_it() -> None:
    # A transcript keeps server lines as read: a copy in each would double what they hold.
    line = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "result": {"text": "héllo wörld " * 200}}, ensure_ascii=False
    )
    before = sys.getsizeof(line)
    assert parse_json(line)[1] is None
    assert sys.getsizeof(line) == before
