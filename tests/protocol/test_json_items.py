"""app/protocol/jsonrpc.json_items: what a message costs to read, counted without reading it. The
count must say "over the limit" exactly when the JSON itself holds that many values, whatever its
strings hold; and a message over it is refused before it is parsed."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from app.protocol.jsonrpc import (
    INVALID_REQUEST,
    PARSE_ERROR,
    Frame,
    FrameError,
    edge_id,
    json_items,
    parse_client_text,
    readable_id,
)

# Strings full of what the count must not be fooled by: quotes, backslashes and structure.
tricky_text = st.text(alphabet=st.sampled_from(list('",[]{}\\:ab \n\u00e9')), max_size=12)
values = st.recursive(
    st.none() | st.booleans() | st.integers() | tricky_text,
    lambda children: st.lists(children, max_size=6) | st.dictionaries(tricky_text, children, max_size=6),
    max_leaves=60,
)


def items_of(value: Any) -> int:
    """The true count, from the parsed value: each container, and each element after the first."""
    if isinstance(value, dict):
        children = list(value.values())
    elif isinstance(value, list):
        children = value
    else:
        return 0
    return 1 + max(len(children) - 1, 0) + sum(items_of(child) for child in children)


@pytest.mark.slow  # 1500 examples: 13-17 s on a busy 2-core machine
@settings(max_examples=600, deadline=None)
@given(values, st.integers(0, 40), st.booleans(), st.booleans())
@example({"a": ",[{" * 50}, 5, False, True)  # structure inside a string: the count over all is fooled
@example(['\\"', '",[', "\\\\"], 1, False, True)  # escaped quotes and backslashes before quotes
@example([""] * 30, 2, False, True)  # many strings: answered from the quotes alone
def test_the_count_is_over_the_limit_exactly_when_the_values_are(value: Any, limit: int, ascii_only: bool,
                                                                  compact: bool) -> None:  # fmt: skip
    separators = (",", ":") if compact else (", ", ": ")
    text = json.dumps(value, ensure_ascii=ascii_only, separators=separators)
    truth = items_of(value)
    assert (json_items(text, limit) > limit) == (truth > limit), (text, truth)


def test_within_the_limit_the_count_is_never_below_the_truth() -> None:
    value = {"rows": [[1, 2], {"a": "x,y"}], "n": [{}]}
    text = json.dumps(value)
    assert items_of(value) <= json_items(text, 1000) <= items_of(value) + 1  # the comma inside "x,y"


def test_a_message_of_many_values_is_refused_before_it_is_parsed() -> None:
    many = '{"jsonrpc":"2.0","id":7,"method":"ping","params":{"a":[' + ",".join(["[]"] * 20_000) + "]}}"
    refused = parse_client_text(many, 1 << 20, max_items=10_000)
    assert isinstance(refused, FrameError) and refused.code == INVALID_REQUEST
    assert refused.reason == "message holds more than 10000 JSON values"
    assert "at most 10000" in refused.explanation and "Nothing was sent" in refused.explanation
    # Not valid JSON past the values, and still refused for them: nothing was parsed.
    assert parse_client_text(many.replace('"method":', '"method"'), 1 << 20, max_items=10_000) == refused
    # But a text whose brackets never close is not JSON at all: a parse error, found without parsing.
    unclosed = parse_client_text(many[:-2], 1 << 20, max_items=10_000)
    assert isinstance(unclosed, FrameError) and unclosed.code == PARSE_ERROR


def test_a_long_string_of_commas_and_brackets_is_one_value() -> None:
    text = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"csv": "a,b,[c],{d}" * 10_000}}
    )
    forwarded = parse_client_text(text, 1 << 20, max_items=100)
    assert isinstance(forwarded, Frame) and forwarded.message["params"]["csv"].startswith("a,b,[c]")


def test_a_message_at_the_limit_is_forwarded_and_one_more_is_refused() -> None:
    def with_numbers(n: int) -> str:  # 3 containers, 3 commas between members, n - 6 between numbers
        numbers = ",".join(["0"] * (n - 5))
        return '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":[' + numbers + "]}}"

    assert isinstance(parse_client_text(with_numbers(100), 1 << 20, max_items=100), Frame)
    assert isinstance(parse_client_text(with_numbers(101), 1 << 20, max_items=100), FrameError)


def test_a_refused_frames_id_is_read_only_when_that_is_cheap() -> None:
    # The id goes into a rate-limit error; a flood of refused frames must not each be parsed.
    few = '{"jsonrpc":"2.0","id":41,"method":"ping","params":{"a":[' + ",".join(["[]"] * 100) + "]}}"
    many = '{"jsonrpc":"2.0","method":"ping","id":42,"params":{"a":[' + ",".join(["[]"] * 5000) + "]}}"
    assert readable_id(few, 64 * 1024) == 41
    # Not parsed: an id in the middle of a costly message is not found (one at either end would be).
    assert len(many) < 64 * 1024 and readable_id(many, 64 * 1024) is None


ids = st.integers(-(10**12), 10**12) | st.text(
    alphabet=st.sampled_from(list('",{}\\:ab \u00e9')), max_size=20
)


@pytest.mark.slow  # 1000 examples: 13-17 s on a busy 2-core machine
@settings(max_examples=500, deadline=None)
@given(ids, values, st.sampled_from(["first", "last", "middle"]), st.booleans(), st.booleans())
@example(5, {"id": 9, "x": ',"id":7}'}, "middle", True, True)  # ids elsewhere, and one inside a string
@example('a","id":3}', [], "first", False, False)  # a string id that looks like the end of another
def test_a_refused_messages_id_read_at_its_ends_is_its_own_or_none(request_id: Any, params: Any, where: str,
                                                                    ascii_only: bool, compact: bool) -> None:  # fmt: skip
    # A message too big to parse for its id is still answered with it where a client writes it: first
    # (the Python SDK), last (the TypeScript SDK). Never another value called "id", wherever it is.
    fields = [("jsonrpc", "2.0"), ("method", "ping"), ("params", {"p": params, "id": 1})]
    fields.insert({"first": 1, "last": 3, "middle": 2}[where], ("id", request_id))
    separators = (",", ":") if compact else (", ", ": ")
    text = json.dumps(dict(fields), ensure_ascii=ascii_only, separators=separators)
    found = edge_id(text)
    assert found is None or found == request_id, (text, found)
    if where != "middle" and len(json.dumps(request_id, ensure_ascii=ascii_only)) < 200:
        assert found == request_id, text


def test_messages_refused_for_their_size_or_values_are_answered_with_their_id() -> None:
    pad = "x" * (2 * 1024 * 1024)
    python_order = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {"pad": pad}})
    typescript_order = json.dumps({"method": "ping", "params": {"pad": pad}, "jsonrpc": "2.0", "id": "req-8"})
    many = json.dumps({"jsonrpc": "2.0", "method": "ping", "params": {"rows": [[]] * 20_000}, "id": 9})
    for text, request_id in ((python_order, 7), (typescript_order, "req-8"), (many, 9)):
        refused = parse_client_text(text, 1024 * 1024)
        assert isinstance(refused, FrameError) and refused.code == INVALID_REQUEST
        assert refused.reply()["id"] == request_id
        assert readable_id(text, 64 * 1024) == request_id
    nested_only = json.dumps({"jsonrpc": "2.0", "method": "ping", "params": {"id": 3, "pad": pad}})
    assert edge_id(nested_only) is None  # a notification: its params' "id" is not its own
