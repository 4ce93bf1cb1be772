"""docs/settings.md is exactly what app/settings_doc.py makes from the Settings model."""

from __future__ import annotations

from pydantic import Field

from app.config import Settings
from app.settings_doc import DOC_PATH, render

REGENERATE = "run `python -m app.settings_doc` and commit docs/settings.md"


def test_every_setting_has_a_description() -> None:
    for name, field in Settings.model_fields.items():
        assert field.description, f"setting {name} has no description"


def test_the_settings_doc_is_what_the_generator_makes() -> None:
    assert DOC_PATH.read_text() == render(), f"docs/settings.md is out of date: {REGENERATE}"


def test_a_new_setting_makes_a_row_the_committed_doc_lacks() -> None:
    """The control for the test above: a setting added to the model changes what render() makes."""

    class WithOneMore(Settings):
        extra_knob: int = Field(7, description="A setting the committed doc has never heard of.")

    rendered = render(WithOneMore)
    row = "| `PLAYGROUND_EXTRA_KNOB` | `7` | A setting the committed doc has never heard of. |\n"
    assert rendered.endswith(row)
    assert rendered != DOC_PATH.read_text()


def test_every_setting_has_one_row_with_its_default() -> None:
    doc = DOC_PATH.read_text()
    for name in Settings.model_fields:
        assert doc.count(f"| `PLAYGROUND_{name.upper()}` |") == 1, f"PLAYGROUND_{name.upper()} has no row"
    assert "| `PLAYGROUND_DATA_DIR` | `./data` |" in doc
    assert '| `PLAYGROUND_TRUSTED_PROXIES` | `["127.0.0.1", "::1"]` |' in doc
    assert "| `PLAYGROUND_SANDBOX` | `true` |" in doc
    assert "| `PLAYGROUND_DATABASE_URL` | unset |" in doc
    assert "| `PLAYGROUND_MAX_MESSAGE_BYTES` | `1048576` (1 MiB) |" in doc
    assert "| `PLAYGROUND_MAX_SESSIONS` | `250` |" in doc


def test_a_description_stays_in_its_cell() -> None:
    class Awkward(Settings):
        awkward: str = Field("a|b", description="One | two,\n  on two lines.")

    assert render(Awkward).endswith("| `PLAYGROUND_AWKWARD` | `a\\|b` | One \\| two, on two lines. |\n")
