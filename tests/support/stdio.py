"""A demo server as a plain subprocess speaking stdio, the way seed 003 drives it."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from tests.support.appserver import ROOT

# A cold start imports the SDK (about 0.4 s here); a busy machine can take many times that.
READ_TIMEOUT_S = 60.0


class StdioServer:
    def __init__(self, module: str = "app.demos.orders") -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", module], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True, encoding="utf-8",
        )  # fmt: skip

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def call(self, id_: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.send(
            {
                "jsonrpc": "2.0",
                "id": id_,
                "method": method,
                **({"params": params} if params is not None else {}),
            }
        )
        assert self.proc.stdout is not None
        return json.loads(self.proc.stdout.readline())

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(READ_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()
        finally:
            assert self.proc.stdout is not None
            self.proc.stdout.close()

    def __enter__(self) -> StdioServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
