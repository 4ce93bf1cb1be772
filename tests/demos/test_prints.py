"""demo-prints: URL-mode elicitation mid-call, -32042, the completion notification, and 2026-07-28."""

from __future__ import annotations

from tests.support.rawclient import RawClient, envelope

URL_MODE = {"elicitation": {"url": {}}}


def text(reply: dict) -> str:
    return reply["result"]["content"][0]["text"]


def test_without_url_mode_nothing_is_asked() -> None:
    for capabilities in ({}, {"elicitation": {}}, {"elicitation": {"form": {}}}):
        with RawClient("app.demos.prints") as client:
            client.initialize(capabilities)
            for tool in ("connect_album", "print_photos"):
                reply = client.call("tools/call", {"name": tool, "arguments": {}})  # nothing before the reply
                assert reply["result"]["isError"] is True
                assert "URL-mode" in text(reply) and "never go through a form" in text(reply)


def test_connect_asks_by_url_and_accept_is_only_consent() -> None:
    with RawClient("app.demos.prints") as client:
        client.initialize(URL_MODE)
        call = client.request("tools/call", {"name": "connect_album", "arguments": {}})
        ask = client.read()
        assert ask["method"] == "elicitation/create"
        assert ask["params"] == {
            "mode": "url",
            "message": "Sign in to your photo cloud so that the print shop can read your album.",
            "url": "https://photos.example/connect?elicitation=sign-in-1",
            "elicitationId": "sign-in-1",
        }
        client.send({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept"}})
        reply, _ = client.until_response(call)
        assert "consent" in text(reply) and "finish_sign_in" in text(reply)

        done, between = client.until_response(
            client.request("tools/call", {"name": "finish_sign_in", "arguments": {}})
        )
        assert between == [
            {
                "jsonrpc": "2.0",
                "method": "notifications/elicitation/complete",
                "params": {"elicitationId": "sign-in-1"},
            }
        ]
        assert done["result"]["isError"] is False
        printed = client.call("tools/call", {"name": "print_photos", "arguments": {"copies": 1}})
        assert text(printed).startswith("Printing 1 copy of 3 photos")


def test_a_declined_sign_in_connects_nothing() -> None:
    with RawClient("app.demos.prints") as client:
        client.initialize(URL_MODE)
        call = client.request("tools/call", {"name": "connect_album", "arguments": {}})
        ask = client.read()
        client.send({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "cancel"}})
        reply, _ = client.until_response(call)
        assert text(reply) == "Not connected: the user chose 'cancel', and nothing was opened."
        refused = client.call("tools/call", {"name": "finish_sign_in", "arguments": {}})
        assert refused["result"]["isError"] is True


def test_print_refuses_with_32042_until_signed_in() -> None:
    with RawClient("app.demos.prints") as client:
        client.initialize(URL_MODE)
        error = client.call("tools/call", {"name": "print_photos", "arguments": {"copies": 2}})["error"]
        assert error["code"] == -32042
        assert error["data"]["elicitations"] == [{
            "mode": "url",
            "message": "Sign in to your photo cloud so that the print shop can read your album.",
            "url": "https://photos.example/connect?elicitation=sign-in-1",
            "elicitationId": "sign-in-1",
        }]  # fmt: skip
        _, between = client.until_response(
            client.request("tools/call", {"name": "finish_sign_in", "arguments": {}})
        )
        assert [m["params"]["elicitationId"] for m in between] == ["sign-in-1"]
        again = client.call("tools/call", {"name": "print_photos", "arguments": {"copies": 2}})
        assert text(again) == (
            "Printing 2 copies of 3 photos: harbour-at-dawn.jpg, grandmother-90.jpg, first-snow.jpg."
        )


def test_in_2026_the_question_rides_the_result_and_the_retry_answers_it() -> None:
    with RawClient("app.demos.prints") as client:
        meta = envelope(URL_MODE)
        interim = client.call("tools/call", {"_meta": meta, "name": "connect_album", "arguments": {}})[
            "result"
        ]
        assert interim["resultType"] == "input_required"
        question = interim["inputRequests"]["sign_in"]
        assert question["method"] == "elicitation/create"
        assert question["params"]["mode"] == "url" and "elicitationId" not in question["params"]
        retry = client.call(
            "tools/call",
            {
                "_meta": meta,
                "name": "connect_album",
                "arguments": {},
                "inputResponses": {"sign_in": {"action": "accept"}},
            },
        )["result"]
        assert retry["resultType"] == "complete" and retry["content"][0]["text"].startswith("Signed in")
        form_only = client.call(
            "tools/call", {"_meta": envelope({"elicitation": {}}), "name": "print_photos", "arguments": {}}
        )
        assert form_only["result"]["isError"] is False  # signed in by now: nothing needs asking
