"""`python -m app.sandbox.forkserver CONFIG_JSON`: started by app.sandbox.launcher, never by hand."""

from __future__ import annotations

import json
import signal
import sys

from app.sandbox import confine
from app.sandbox.forkserver.server import ForkServer


def main() -> None:
    config = json.loads(sys.argv[1])
    # SIGTERM, not SIGKILL: its handler ends every instance's whole process group, which matters
    # where a server's exit does not end its PID namespace (that layer missing).
    confine.die_with_parent(config["parent"], signal.SIGTERM)
    server = ForkServer(config)
    server.prepare()
    server.serve()


if __name__ == "__main__":
    main()
