"""Client ID metadata documents, fetched as the authorization server fetches them, from a real local
HTTPS server: the document is read and kept as its headers say, and every SSRF rule holds from the
attacker's side (a private address in hosting mode, a redirect, a mismatched client_id, too big, not
https)."""

from __future__ import annotations

import functools
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from app.config import Settings
from app.progress import SQLiteProgressStore
from app.web import client_documents
from app.web.client_documents import MAX_BYTES, ClientDocuments, DocumentError, is_document_url
from app.web.registration import ADDRESS, NewClients, document_client
from tests.support.https_server import Answer, https_server, make_authority

SCOPES = "mcp:read mcp:tools"
REDIRECT = "http://127.0.0.1:9/callback"


@pytest.fixture(scope="module")
def authority(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return make_authority(tmp_path_factory.mktemp("authority"))


@pytest.fixture
def site(authority: tuple[Path, Path]) -> Iterator[tuple[str, dict[str, Answer], list[str]]]:
    """The client's own site: answers by path (set by the test), and every path asked for."""
    answers: dict[str, Answer] = {}
    asked: list[str] = []

    def answer(path: str) -> Answer:
        asked.append(path)
        return answers.get(path, (404, {}, b"{}"))

    with https_server(*authority, answer) as base:
        yield base, answers, asked


def document(url: str, **extra: object) -> bytes:
    return json.dumps(
        {"client_id": url, "client_name": "Doc client", "redirect_uris": [REDIRECT], **extra}
    ).encode()


def fetcher(authority: tuple[Path, Path], allow_private: bool = True) -> ClientDocuments:
    return ClientDocuments(allow_private, authority[0], SCOPES)


async def test_a_document_is_read_and_kept_as_its_cache_control_says(authority, site) -> None:  # noqa: ANN001
    base, answers, asked = site
    url = base + "/client.json"
    answers["/client.json"] = (200, {"Cache-Control": "max-age=60"}, document(url))
    documents = fetcher(authority)
    info = await documents.client(url)
    assert info.client_id == url and info.client_name == "Doc client" and info.scope == SCOPES
    assert [str(uri) for uri in info.redirect_uris or []] == [
        REDIRECT
    ] and info.token_endpoint_auth_method == "none"
    await documents.client(url)
    assert asked == ["/client.json"]  # kept
    answers["/fresh.json"] = (200, {"Cache-Control": "no-store"}, document(base + "/fresh.json"))
    await documents.client(base + "/fresh.json")
    await documents.client(base + "/fresh.json")
    assert asked.count("/fresh.json") == 2  # no-store: fetched every time


@pytest.mark.parametrize(
    ("path", "answer", "says"),
    [
        ("/moved.json", (302, {"Location": "https://127.0.0.1:1/x"}, b""), "redirects are not followed"),
        ("/other.json", (200, {}, b"OTHER"), "another client_id"),
        ("/big.json", (200, {}, b" " * (MAX_BYTES + 1)), "over 64 KiB"),
        ("/text.json", (200, {}, b"not json"), "not JSON"),
        ("/secret.json", (200, {}, b"SECRET"), "public clients only"),
        ("/missing.json", (404, {}, b""), "answered 404"),
    ],
)
async def test_a_bad_document_is_refused_with_its_reason(
    authority, site, path: str, answer: Answer, says: str
) -> None:  # noqa: ANN001
    base, answers, _ = site
    url = base + path
    status, headers, body = answer
    if body == b"OTHER":
        body = document(base + "/someone-else.json")
    if body == b"SECRET":
        body = document(url, token_endpoint_auth_method="client_secret_post")
    answers[path] = (status, headers, body)
    with pytest.raises(DocumentError, match=says):
        await fetcher(authority).client(url)


async def test_in_hosting_mode_a_name_that_resolves_to_a_private_address_is_never_fetched(
    authority, site
) -> None:  # noqa: ANN001
    base, answers, asked = site
    answers["/client.json"] = (200, {}, document(base + "/client.json"))
    for url in (base + "/client.json", base.replace("127.0.0.1", "localhost") + "/client.json"):
        with pytest.raises(DocumentError, match="does not fetch from"):
            await fetcher(authority, allow_private=False).client(url)
    assert asked == []  # refused before any connection


async def test_only_https_urls_with_a_path_are_documents(authority) -> None:  # noqa: ANN001
    assert is_document_url("https://example.com/client.json")
    for not_one in (
        "http://example.com/client.json",
        "https://example.com/",
        "https://example.com",
        "abc-123",
    ):
        assert not is_document_url(not_one)
    with pytest.raises(DocumentError, match="https URL"):
        await fetcher(authority).client("https://user:pw@127.0.0.1/client.json")


async def test_an_untrusted_certificate_is_refused(tmp_path: Path, site) -> None:  # noqa: ANN001
    base, answers, _ = site
    answers["/client.json"] = (200, {}, document(base + "/client.json"))
    stranger = make_authority(tmp_path)[0]  # another authority than the server's
    with pytest.raises(DocumentError, match="could not be fetched"):
        await ClientDocuments(True, stranger, SCOPES).client(base + "/client.json")


def test_private_addresses_are_fetched_only_when_serving_on_loopback() -> None:
    assert Settings().client_documents_from_private
    assert not Settings(hosting_mode=True).client_documents_from_private
    assert not Settings(host="0.0.0.0").client_documents_from_private
    assert not Settings(client_documents_private=False).client_documents_from_private


async def test_new_document_clients_count_against_their_address_and_a_big_one_is_not_kept(
    authority, site, tmp_path: Path
) -> None:  # noqa: ANN001
    """From the attacker's side: every new client_id URL at /authorize would be a fetch and a row kept,
    so an address adds at most its hourly count of new clients (a client already kept is not new, one
    that could not be kept is not counted) and a client's metadata has the registration's size limit."""
    base, answers, asked = site
    for name in ("a", "b", "c", "d"):
        answers[f"/{name}.json"] = (200, {"Cache-Control": "no-store"}, document(f"{base}/{name}.json"))
    uris = [f"http://127.0.0.1:{port}/callback" for port in range(1000, 1400)]  # 12 KiB, under 64 KiB
    answers["/big.json"] = (200, {}, document(f"{base}/big.json", redirect_uris=uris))
    store = SQLiteProgressStore(tmp_path / "p.sqlite3")
    store.open()
    documents, new_clients = fetcher(authority), NewClients(2)
    keep = functools.partial(document_client, store, documents, new_clients)
    token = ADDRESS.set("10.0.0.1")
    try:
        assert await keep(f"{base}/missing.json") is None  # refused (404): not counted
        assert await keep(f"{base}/big.json") is None and store.oauth_client(f"{base}/big.json") is None
        assert (await keep(f"{base}/a.json")).client_name == "Doc client"
        assert await keep(f"{base}/b.json") is not None
        assert await keep(f"{base}/a.json") is not None  # kept already: not new
        asked.clear()
        assert await keep(f"{base}/c.json") is None and store.oauth_client(f"{base}/c.json") is None
        assert asked == []  # past the count, not even fetched
        ADDRESS.set("10.0.0.2")
        assert await keep(f"{base}/d.json") is not None  # another address has a count of its own
    finally:
        ADDRESS.reset(token)
        store.close()


async def test_a_document_that_trickles_in_is_given_up_on_in_its_time(
    authority,
    site,
    monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
) -> None:
    """From the side of a client's site that sends its document a byte at a time, each byte before a
    read would time out: without a time for the whole fetch, 80 bytes held it for 16 s."""
    monkeypatch.setattr(client_documents, "TIMEOUT_S", 1.0)
    base, answers, _ = site
    url = base + "/slow.json"
    answers["/slow.json"] = (200, {"Content-Type": "application/json"}, [bytes([b]) for b in document(url)])
    began = time.monotonic()
    with pytest.raises(DocumentError, match="did not arrive within 1 s"):
        await fetcher(authority).client(url)
    assert time.monotonic() - began < 5


async def test_names_that_never_resolve_hold_a_few_threads_not_the_apps(
    authority,
    monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
) -> None:
    """From the side of a client whose document names hosts whose name server never answers: each
    lookup holds a thread, and the app's other work (pages, queries) runs on the same threads. Ten at
    once wait in at most LOOKUPS_AT_ONCE threads, each is given up on in its time, and other work
    goes on meanwhile."""
    monkeypatch.setattr(client_documents, "TIMEOUT_S", 0.5)
    answered = threading.Event()
    inside: list[int] = []
    now_inside = [0]
    lock = threading.Lock()

    def never_answers(host: str, *args: object, **kwargs: object) -> list:
        if not host.endswith(".hostile.example"):
            return real(host, *args, **kwargs)
        with lock:
            now_inside[0] += 1
            inside.append(now_inside[0])
        answered.wait(30)  # until the test ends: a name server that never answers
        with lock:
            now_inside[0] -= 1
        raise socket.gaierror("no answer")

    real = socket.getaddrinfo
    monkeypatch.setattr(socket, "getaddrinfo", never_answers)
    documents = fetcher(authority)
    errors: list[str] = []
    try:

        async def fetch(n: int) -> None:
            try:
                await documents.client(f"https://n{n}.hostile.example/client.json")
            except DocumentError as exc:
                errors.append(str(exc))

        async with anyio.create_task_group() as group:
            for n in range(10):
                group.start_soon(fetch, n)
            await anyio.sleep(0)
            # Another part of the app needs a thread meanwhile, and gets one at once.
            with anyio.fail_after(2):
                assert await anyio.to_thread.run_sync(lambda: "served") == "served"
    finally:
        answered.set()
    assert len(errors) == 10 and all("did not arrive within 0.5 s" in error for error in errors), errors
    assert max(inside) <= client_documents.LOOKUPS_AT_ONCE, inside
