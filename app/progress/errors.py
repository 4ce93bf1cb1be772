"""What the progress store raises for a call that may work later or differently: the database away
for now, or a save made on a version that is no longer the newest."""

from __future__ import annotations

from app.progress.store import ProgressError


class SavedSince(ProgressError):
    """A save made on an older version: another (a tab, a device) saved `version` at `saved_at` since."""

    def __init__(self, version: int, saved_at: float) -> None:
        super().__init__(f"version {version} was saved since")
        self.version = version
        self.saved_at = saved_at


class StoreUnavailable(ProgressError):
    """The database did not do what was asked, for now: unreachable, full, or locked by another. Nothing
    of the call was kept; the same call may work in a moment (the connection is made again if lost)."""
