"""app/protocol/jsonrpc: orjson reads and writes a message on the relay's way, and must agree with the
standard library's strict reading on every text, valid or not: the same value with the same types,
or the same refusal. Where orjson would read differently (integers past 64 bits, deep nesting), the
standard library reads."""

from __future__ import annotations

import json
import math
import sys
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from app.protocol.jsonrpc import FrameError, parse_client_text, parse_json, parse_json_strictly, to_line

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


def agree(text: str) -> None:
    fast, fast_error = parse_json(text)
    slow, slow_error = parse_json_strictly(text)
    assert (fast_error is None) == (slow_error is None), (text, fast_error, slow_error)
    if slow_error is None:
        assert same(fast, slow), text
    else:
        assert fast_error == slow_error


@settings(max_examples=400, deadline=None)
@given(values, st.sampled_from([None, 0, 2]), st.booleans())
def test_any_value_is_read_as_the_standard_library_reads_it(
    value: Any, indent: int | None, ascii_only: bool
) -> None:
    agree(json.dumps(value, indent=indent, ensure_ascii=ascii_only))


@settings(max_examples=600, deadline=None)
@given(
    values, st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 2), damage), min_size=1, max_size=3)
)
def test_a_damaged_text_is_refused_or_read_as_the_standard_library_does(value: Any, edits: list) -> None:
    text = json.dumps(value)
    for at, kind, piece in edits:
        at %= len(text) + 1
        if kind == 0:
            text = text[:at] + piece + text[at:]
        elif kind == 1:
            text = text[:at] + text[at + 1 :]
        else:
            text = text[:at] + piece + text[at + 1 :]
    agree(text)


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


def test_nesting_too_deep_for_orjson_is_read_or_refused_by_the_standard_library() -> None:
    for depth in (249, 250, 251, 254, 255, 300):
        agree("[" * depth + "]" * depth)
    for depth in (249, 250, 251, 254, 255, 300, 600):
        value, error = parse_json("[" * depth + "]" * depth)
        assert error is None
        assert to_line(value) == "[" * depth + "]" * depth
    for depth in (1020, 50_000):  # orjson reads up to 1024 deep, further than Python's recursion limit
        deeper = "[" * depth + "]" * depth
        error = parse_json(deeper)[1]
        assert error is not None and error == parse_json_strictly(deeper)[1]
        assert error.reason == "nested too deeply"


def test_what_orjson_refuses_gets_the_standard_librarys_explanation() -> None:
    for text, reason in (
        ('{"a": NaN}', "NaN is not valid JSON"),
        ("[1e400]", "the number 1e400 is too large to represent"),
        ("\ufeff{}", "Unexpected UTF-8 BOM (decode using utf-8-sig) at line 1, column 1"),
        ('{"a": 1,}', "Expecting property name enclosed in double quotes at line 1, column 9"),
    ):
        value, error = parse_json(text)
        assert value is None and error is not None and error.reason == reason, (text, error)


def test_a_lone_surrogate_escape_is_read_and_then_refused_as_before() -> None:
    # orjson refuses it; the standard library reads it, and the line it would make cannot be UTF-8.
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
