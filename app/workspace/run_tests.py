"""A run of the learner's tests: pytest on test_server.py beside a server.py, in their sandbox.

This file is a program, not a module of the app: its text is what the sandboxed instance runs (as a
lesson's runnable block runs, app/web/runs.py), and the two files arrive on its stdin as one JSON
line, `{"server.py": "...", "test_server.py": "..."}`, so that a run holds each file under the
workspace's own size limit. It writes them into a new folder, runs pytest there, prints one
summary line (RESULT_PREFIX, then JSON: pytest's exit code and each test's outcome), and exits with
pytest's exit code.

The learner's tests run in this same process and could print a summary of their own: the summary is
what an honest run reports, for the exercise's words, not a guard against a learner fooling
themselves.
"""

import json
import os
import sys
import tempfile

RESULT_PREFIX = "playground-tests: "


class Outcomes:
    """Each test's outcome as pytest reports it (a pytest plugin: hooks by name)."""

    def __init__(self) -> None:
        self.tests: dict[str, str] = {}

    def pytest_runtest_logreport(self, report) -> None:  # noqa: ANN001 - pytest's TestReport
        if report.when == "call" or report.outcome != "passed":
            # A failed set-up or tear-down is the test's failure too; the call's own outcome otherwise.
            if self.tests.get(report.nodeid) in (None, "passed"):
                self.tests[report.nodeid] = (
                    "error" if report.when != "call" and report.failed else report.outcome
                )


def main() -> int:
    # One stream, in order: whoever reads the run reads stdout only, and a pipe nobody reads would stall it.
    os.dup2(sys.stdout.fileno(), sys.stderr.fileno())
    files = json.loads(sys.stdin.readline())
    # Removed afterwards: in the sandbox TMPDIR is the instance's own tmpfs, but an unsandboxed app
    # (`sandbox=False` on a laptop) shares the machine's /tmp.
    with tempfile.TemporaryDirectory(prefix="tests-", ignore_cleanup_errors=True) as folder:
        return run(folder, files)


def run(folder: str, files: dict[str, str]) -> int:
    """pytest on the two files, written into `folder`; prints the summary line; pytest's exit code."""
    for name in ("server.py", "test_server.py"):
        with open(os.path.join(folder, name), "w", encoding="utf-8") as out:
            out.write(files[name])
    os.chdir(folder)
    sys.path[0] = folder  # `from server import mcp` finds the learner's server, not this program
    sys.argv = ["pytest"]
    # Only pytest and the anyio plugin (the SDK brings anyio): the same run wherever the app is installed.
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    import pytest

    outcomes = Outcomes()
    code = pytest.main(
        [
            "-p",
            "anyio",
            "-p",
            "no:cacheprovider",
            "-v",
            "--tb=short",
            "--color=no",
            # The sandbox imports the SDK (and anyio) before the file runs: pytest cannot rewrite
            # their asserts, which the learner's tests do not need, and would warn about each.
            "-W",
            "ignore::pytest.PytestAssertRewriteWarning",
            "test_server.py",
        ],  # fmt: skip
        plugins=[outcomes],
    )
    summary = {"exit": int(code), "tests": outcomes.tests}  # a file that cannot load: exit code 2
    print(RESULT_PREFIX + json.dumps(summary), flush=True)
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
