"""Writes docs/settings.md, the table of every setting, from the Settings model in app/config.py.

`python -m app.settings_doc` rewrites the file; tests/test_settings_doc.py fails when the committed
file differs from what render() makes, so a setting's doc changes with the setting.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings

from app.config import PROJECT_ROOT, Settings

DOC_PATH = PROJECT_ROOT / "docs" / "settings.md"

HEADER = """\
Generated from `app/config.py` by `python -m app.settings_doc`: edit a description there, then run it.

# Settings

Every setting is an environment variable with the prefix `PLAYGROUND_`; a list is written as JSON
(`PLAYGROUND_ALLOWED_HOSTS='["class.example.org"]'`), a yes or no as `true` or `false`. The same
names, in lower case and without the prefix, are the fields of `Settings` in `app/config.py`, which
`create_app(settings)` takes. `python -m app --host H --port P` sets the first two from the command line.

| variable | default | what it does |
|---|---|---|
"""


def env_name(model: type[BaseSettings], field_name: str) -> str:
    prefix = model.model_config.get("env_prefix") or ""
    return f"{prefix}{field_name}".upper()


def default_text(name: str, field: FieldInfo) -> str:
    """The default as one would write it in the environment, or `unset` (the description says what
    an unset setting means). A byte count also in KiB, MiB or GiB."""
    value: Any = field.get_default(call_default_factory=True)
    if value is None:
        return "unset"
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, Path) and value.is_relative_to(PROJECT_ROOT):
        text = "./" + value.relative_to(PROJECT_ROOT).as_posix()
    elif isinstance(value, list):
        text = json.dumps(value)
    else:
        text = str(value)
    if isinstance(value, int) and ("_bytes" in name) and (size := binary_size(value)):
        return f"`{text}` ({size})"
    return f"`{text}`"


def binary_size(count: int) -> str | None:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale and count % scale == 0:
            return f"{count // scale} {unit}"
    return None


def cell(text: str) -> str:
    """Table cells are one line, and a `|` would end the cell."""
    return " ".join(text.split()).replace("|", "\\|")


def render(model: type[BaseSettings] = Settings) -> str:
    rows = [
        f"| `{env_name(model, name)}` | {cell(default_text(name, field))} | {cell(field.description or '')} |\n"
        for name, field in model.model_fields.items()
    ]
    return HEADER + "".join(rows)


def main() -> int:
    DOC_PATH.write_text(render())
    print(f"wrote {DOC_PATH.relative_to(PROJECT_ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
