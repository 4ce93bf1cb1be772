"""The authorization lessons' checks, on the steps of a protected endpoint's flows (app/web/oauth_log.py
records them; tests/web/test_oauth.py runs a real flow)."""

from __future__ import annotations

from app.course.checks import AUTHORIZATION, REGISTRY

FULL = ["challenge", "resource_metadata", "authorize", "consent", "token"]


def run(name: str, steps: list[str]) -> tuple[bool, str]:
    result = REGISTRY[name].run(steps)
    return result.passed, result.reason


def test_they_read_a_flow_and_say_what_is_missing_at_each_point() -> None:
    names = [name for name, check in REGISTRY.items() if check.reads == AUTHORIZATION]
    assert names == ["auth-challenged", "auth-metadata-read", "auth-token-issued", "auth-stepped-up",
                     "auth-revoked-refused"]  # fmt: skip
    for name in names:
        passed, reason = run(name, [])
        assert not passed and "No client" in reason or "No request" in reason
    assert run("auth-challenged", ["challenge"])[0]
    assert run("auth-challenged", ["invalid_token"])[0]  # a 401 for a bad token carries the address too
    assert run("auth-metadata-read", ["challenge"]) == (
        False, "The client got 401 but has not read the metadata: does it speak MCP authorization?")  # fmt: skip
    assert run("auth-metadata-read", FULL[:2])[0]
    assert "answer on the consent page" in run("auth-token-issued", FULL[:3])[1]
    assert not run("auth-token-issued", [*FULL[:4], "token_refused"])[0]
    assert run("auth-token-issued", FULL)[0]


def test_a_step_up_is_a_403_then_a_token_not_a_token_before_it() -> None:
    assert not run("auth-stepped-up", FULL)[0]
    assert not run("auth-stepped-up", [*FULL, "insufficient_scope"])[0]
    assert not run("auth-stepped-up", [*FULL, "insufficient_scope", "authorize", "consent"])[0]
    assert run("auth-stepped-up", [*FULL, "insufficient_scope", "authorize", "consent", "token"])[0]


def test_a_revoked_token_refused_is_a_revoke_then_a_401_for_a_token_not_before_it() -> None:
    assert "revoke it" in run("auth-revoked-refused", FULL)[1]
    assert not run("auth-revoked-refused", [*FULL, "invalid_token", "revoke"])[0]  # refused before
    assert not run("auth-revoked-refused", [*FULL, "revoke", "challenge"])[0]  # no token sent
    assert run("auth-revoked-refused", [*FULL, "revoke", "invalid_token"])[0]
    assert run("auth-revoked-refused", [*FULL, "revoke", "invalid_token", "token", "revoke", "challenge"])[0]
