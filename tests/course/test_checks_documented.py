"""Every hands-on check a lesson can list is in docs/authoring.md's table, for lesson authors."""

from __future__ import annotations

from pathlib import Path

from app.course import checks

AUTHORING = Path(__file__).resolve().parents[2] / "docs" / "authoring.md"


def test_every_registered_check_is_documented() -> None:
    text = AUTHORING.read_text()
    assert [name for name in checks.REGISTRY if f"| `{name}`" not in text and f"/ `{name}`" not in text] == []
