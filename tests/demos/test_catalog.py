"""demo-catalog: structured output, links, annotations, lists in pages, completion, per-revision fields."""

from __future__ import annotations

from app.demos.catalog import PAGE_SIZE, _cursor
from tests.support.rawclient import RawClient, envelope


def every_page(client: RawClient, method: str, key: str, meta: dict | None = None) -> list[list[dict]]:
    pages, params = [], {"_meta": meta} if meta else {}
    while True:
        result = client.call(method, params or None)["result"]
        pages.append(result[key])
        if "nextCursor" not in result:
            return pages
        params = {**params, "cursor": result["nextCursor"]}


def test_every_list_comes_in_pages_and_ends_without_a_cursor() -> None:
    with RawClient("app.demos.catalog") as client:
        assert client.initialize()["capabilities"]["completions"] == {}
        resources = every_page(client, "resources/list", "resources")
        assert [len(page) for page in resources] == [5, 5, 2]
        uris = [r["uri"] for page in resources for r in page]
        assert uris == [f"library://books/b-{n}" for n in range(101, 113)]
        tools = every_page(client, "tools/list", "tools")
        assert [len(page) for page in tools] == [PAGE_SIZE, 2]
        assert [t["name"] for t in tools[0]][:3] == ["get_book", "search_books", "book_card"]
        assert len(every_page(client, "prompts/list", "prompts")) == 1


def test_a_cursor_it_never_gave_is_invalid_params() -> None:
    with RawClient("app.demos.catalog") as client:
        client.initialize()
        for method, cursor in [
            ("resources/list", "made-up"),
            ("tools/list", _cursor("resources", 5)),  # another list's cursor
            ("resources/list", _cursor("resources", 12)),  # past the end
            ("resources/list", _cursor("resources", 5) + "=="),  # not as it was given
        ]:
            error = client.call(method, {"cursor": cursor})["error"]
            assert error["code"] == -32602 and error["message"] == "Invalid cursor", (method, cursor)


def test_structured_output_links_and_embedded_resources() -> None:
    with RawClient("app.demos.catalog") as client:
        client.initialize()
        tool = client.call("tools/list")["result"]["tools"][0]
        assert tool["title"] == "Book details" and tool["outputSchema"]["type"] == "object"
        assert tool["annotations"] == {"readOnlyHint": True, "openWorldHint": False}
        assert tool["icons"][0]["src"].startswith("data:image/png;base64,")

        book = client.call("tools/call", {"name": "get_book", "arguments": {"book_id": "b-104"}})["result"]
        assert book["structuredContent"]["title"] == "Seeds of Glass"
        # A failed call is an error result without structured content (lesson 16 says so).
        missing = client.call("tools/call", {"name": "get_book", "arguments": {"book_id": "b-999"}})["result"]
        assert missing["isError"] is True and "structuredContent" not in missing
        assert book["content"][0]["type"] == "text" and '"Seeds of Glass"' in book["content"][0]["text"]

        found = client.call("tools/call", {"name": "search_books", "arguments": {"words": "okafor"}})[
            "result"
        ]
        links = [c for c in found["content"] if c["type"] == "resource_link"]
        assert [link["uri"] for link in links] == ["library://books/b-104", "library://books/b-109"]
        read = client.call("resources/read", {"uri": links[1]["uri"]})["result"]
        assert read["contents"][0]["text"].startswith("# Signal Garden")

        card = client.call("tools/call", {"name": "book_card", "arguments": {"book_id": "b-102"}})["result"]
        assert card["content"][1]["type"] == "resource"
        assert card["content"][1]["resource"]["uri"] == "library://books/b-102"


def test_completion_for_a_prompt_and_a_template_with_context() -> None:
    with RawClient("app.demos.catalog") as client:
        client.initialize()
        genre = client.call(
            "completion/complete",
            {"ref": {"type": "ref/prompt", "name": "recommend"}, "argument": {"name": "genre", "value": "s"}},
        )["result"]["completion"]
        assert genre == {"values": ["science-fiction"], "total": 1, "hasMore": False}
        shelf = {"type": "ref/resource", "uri": "library://shelves/{genre}/{author}"}
        poets = client.call(
            "completion/complete",
            {
                "ref": shelf,
                "argument": {"name": "author", "value": ""},
                "context": {"arguments": {"genre": "poetry"}},
            },
        )["result"]["completion"]
        assert poets["values"] == ["ines-duarte"]
        everyone = client.call(
            "completion/complete", {"ref": shelf, "argument": {"name": "author", "value": ""}}
        )
        assert everyone["result"]["completion"]["hasMore"] is True
        assert everyone["result"]["completion"]["total"] == 7


def test_an_older_revision_gets_only_its_own_fields() -> None:
    with RawClient("app.demos.catalog") as client:
        info = client.initialize(version="2025-03-26")
        assert "icons" not in info["serverInfo"] and "title" not in info["serverInfo"]
        tools = client.call("tools/list")["result"]["tools"]
        assert all({"title", "outputSchema", "icons"}.isdisjoint(tool) for tool in tools)
        assert tools[0]["annotations"]["readOnlyHint"] is True
        book = client.call("tools/call", {"name": "get_book", "arguments": {"book_id": "b-101"}})["result"]
        assert "structuredContent" not in book
        found = client.call("tools/call", {"name": "search_books", "arguments": {"words": "salt"}})["result"]
        assert {c["type"] for c in found["content"]} == {"text"}
    with RawClient("app.demos.catalog") as client:
        info = client.initialize(version="2024-11-05")
        assert "completions" not in info["capabilities"]
        assert all("annotations" not in tool for tool in client.call("tools/list")["result"]["tools"])


def test_pages_in_2026_carry_cache_hints() -> None:
    with RawClient("app.demos.catalog") as client:
        pages = every_page(client, "resources/list", "resources", envelope())
        assert [len(page) for page in pages] == [5, 5, 2]
        result = client.call("tools/list", {"_meta": envelope()})["result"]
        assert result["resultType"] == "complete" and "ttlMs" in result and "cacheScope" in result
