"""Stand in for the app as the fork server's parent, so that a test can kill that parent outright.

    python -m tests.support.forkserver_parent FD UID_LOW UID_HIGH [WRAPPER...]

Starts the fork server as the app does (Launcher.command, whose parent-death signal names this
process) on the inherited socket FD, through WRAPPER if given, and waits for it.
"""

from __future__ import annotations

import subprocess
import sys

from app.config import PROJECT_ROOT
from app.sandbox.launcher import child_environment
from tests.support.forkserver import launcher_for


def main() -> None:
    fd, low, high = (int(arg) for arg in sys.argv[1:4])
    command = [*sys.argv[4:], *launcher_for(range(low, high)).command(fd)]
    env = child_environment(str(PROJECT_ROOT))
    sys.exit(subprocess.call(command, pass_fds=[fd], stdin=subprocess.DEVNULL, env=env))


if __name__ == "__main__":
    main()
