"""The layers of docs/ARCHITECTURE.md hold: the import contract in pyproject.toml, run as `make lint`
runs it (import-linter), on the app and, as a control, on a small tree that breaks it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.appserver import ROOT

LINT_IMPORTS = str(Path(sys.executable).with_name("lint-imports"))
LAYERS = ["web", "fleet", "relay", "course", "sandbox", "progress", "demos", "workspace", "protocol"]


def lint_imports(where: Path, config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [LINT_IMPORTS, "--no-cache", "--no-logo", str(config)],
        cwd=where, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_the_app_keeps_its_layers() -> None:
    result = lint_imports(ROOT, ROOT / "pyproject.toml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_the_contract_finds_the_course_importing_the_sandbox(tmp_path: Path) -> None:
    """The same contract on a tree where the course reaches for a process and the sandbox for the web."""
    for layer in LAYERS:
        package = tmp_path / "app" / layer
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("")
    for module in ("__init__", "config", "metrics"):  # the modules the contract names besides layers
        (tmp_path / "app" / f"{module}.py").write_text("")
    (tmp_path / "app" / "course" / "exercises.py").write_text("from app.sandbox import process\n")
    (tmp_path / "app" / "sandbox" / "process.py").write_text("import app.web\n")
    result = lint_imports(tmp_path, ROOT / "pyproject.toml")
    assert result.returncode != 0
    assert "app.course is not allowed to import app.sandbox" in result.stdout
    assert "app.sandbox is not allowed to import app.web" in result.stdout


# docs/ARCHITECTURE.md: small modules with obvious names; a module that outgrows this is split.
MODULE_LINES = 500


def test_no_module_of_the_app_is_over_its_size() -> None:
    sizes = {path.relative_to(ROOT): len(path.read_text(encoding="utf-8").splitlines())
             for path in (ROOT / "app").rglob("*.py")}  # fmt: skip
    assert len(sizes) > 100  # the app's modules were found
    assert {str(path): lines for path, lines in sizes.items() if lines > MODULE_LINES} == {}
