"""The exact version pyproject.toml pins a dependency to, for the tests that guard code reaching past
its public API (app/web/wsprotocol.py into uvicorn, app/demos/stdio.py into the MCP SDK)."""

from __future__ import annotations

import re
import tomllib

from app.config import PROJECT_ROOT


def pinned(package: str) -> str:
    pyproject = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())
    for requirement in pyproject["project"]["dependencies"]:
        if found := re.fullmatch(
            rf"{re.escape(package)}(\[[a-z,]+\])?==([0-9.]+)", requirement.replace(" ", "")
        ):
            return found[2]
    raise AssertionError(f"pyproject.toml does not pin {package} to one version")
