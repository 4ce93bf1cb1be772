"""Learner identity pieces on their own: signed cookies, the client address behind proxies, minting."""

from __future__ import annotations

from app.relay.rates import KeyedRate
from app.web.client import TrustedProxies, resolve_address, resolve_https
from app.web.learner import MINT_WINDOW_S, CookieSigner, new_id


def scope(peer: str, forwarded: str | None = None, proto: str | None = None, scheme: str = "http") -> dict:
    headers = [(b"x-forwarded-for", forwarded.encode())] if forwarded else []
    if proto:
        headers.append((b"x-forwarded-proto", proto.encode()))
    return {"type": "http", "client": (peer, 5555), "headers": headers, "scheme": scheme}


def test_a_signed_cookie_proves_its_learner_and_nothing_else_does() -> None:
    signer = CookieSigner("secret-one")
    learner = new_id()
    value = signer.sign(learner)
    assert signer.verify(value) == learner
    assert signer.verify(learner) is None  # a bare id is not proof
    assert signer.verify(value[:-1] + ("A" if value[-1] != "A" else "B")) is None
    assert signer.verify(new_id() + "." + value.rpartition(".")[2]) is None  # a signature is for one id
    assert CookieSigner("secret-two").verify(value) is None
    assert signer.verify("") is None and signer.verify(".") is None and signer.verify("é.é") is None


def test_forwarded_for_counts_only_from_a_trusted_proxy() -> None:
    loopback = TrustedProxies(["127.0.0.1", "::1"])
    assert resolve_address(scope("127.0.0.1", "198.51.100.9"), loopback) == "198.51.100.9"
    assert resolve_address(scope("203.0.113.5", "198.51.100.9"), loopback) == "203.0.113.5"
    assert resolve_address(scope("127.0.0.1", "198.51.100.9"), TrustedProxies([])) == "127.0.0.1"
    # A client's own made-up hop sits left of what the proxy appended: the rightmost untrusted one counts.
    assert resolve_address(scope("127.0.0.1", "10.9.9.9, 198.51.100.9"), loopback) == "198.51.100.9"
    assert resolve_address(scope("127.0.0.1", "198.51.100.9, 127.0.0.1"), loopback) == "198.51.100.9"
    assert resolve_address(scope("127.0.0.1", "not-an-address"), loopback) == "127.0.0.1"
    assert (
        resolve_address(scope("10.1.2.3", "198.51.100.9"), TrustedProxies(["10.0.0.0/8"])) == "198.51.100.9"
    )
    assert resolve_address(scope("127.0.0.1"), loopback) == "127.0.0.1"


def test_new_identities_per_address_are_limited_in_a_window() -> None:
    limiter = KeyedRate(3, MINT_WINDOW_S)
    assert [limiter.wait("198.51.100.9") for _ in range(3)] == [None, None, None]
    wait = limiter.wait("198.51.100.9")
    assert wait is not None and 0 < wait <= MINT_WINDOW_S
    assert limiter.wait("198.51.100.10") is None


def test_https_is_what_the_connection_or_a_trusted_proxy_says() -> None:
    loopback = TrustedProxies(["127.0.0.1"])
    assert resolve_https(scope("203.0.113.5", scheme="https"), loopback)
    assert resolve_https(scope("127.0.0.1", proto="https"), loopback)
    assert not resolve_https(scope("203.0.113.5", proto="https"), loopback)  # a stranger's word is not taken
    assert not resolve_https(scope("127.0.0.1", proto="http"), loopback)
    assert not resolve_https(scope("127.0.0.1"), loopback)
