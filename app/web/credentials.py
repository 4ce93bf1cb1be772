"""Secrets that people type or send (the instructor token, the access code, join and resume codes):
compared safely whatever bytes arrive, and guessing throttled per client address.

Only failures count, per kind of secret and client address, in a sliding window: a class behind one
NAT address, where a few learners mistype their join code once, all get in; a script trying codes
gets 429 with Retry-After after a burst.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections import deque

# Failures are counted over this window (PLAYGROUND_FAILED_ATTEMPTS_PER_ADDRESS in it).
FAILURE_WINDOW_S = 600.0
# Addresses remembered per kind before the quiet ones are forgotten.
ADDRESSES_KEPT = 10_000


def same_secret(presented: str, expected: str) -> bool:
    """Constant-time comparison of any two strings (non-ASCII and unpaired surrogates included)."""
    if not expected:
        return False
    a = presented.encode("utf-8", errors="surrogatepass")
    b = expected.encode("utf-8", errors="surrogatepass")
    return hmac.compare_digest(hashlib.sha256(a).digest(), hashlib.sha256(b).digest())


class FailureThrottle:
    """Failed attempts per (kind, address); past `limit` in the window, the next attempt waits."""

    def __init__(self, limit: int, window_s: float = FAILURE_WINDOW_S) -> None:
        self.limit = limit
        self.window_s = window_s
        self._failures: dict[tuple[str, str], deque[float]] = {}

    def wait(self, kind: str, address: str) -> float | None:
        """None when an attempt may be made now, else the seconds until one may."""
        failures = self._failures.get((kind, address))
        if not failures:
            return None
        now = time.monotonic()
        while failures and now - failures[0] > self.window_s:
            failures.popleft()
        if len(failures) < self.limit:
            return None
        return max(self.window_s - (now - failures[0]), 1.0)

    def failed(self, kind: str, address: str) -> None:
        now = time.monotonic()
        if len(self._failures) >= ADDRESSES_KEPT:
            for key in [k for k, t in self._failures.items() if not t or now - t[-1] > self.window_s]:
                del self._failures[key]
        self._failures.setdefault((kind, address), deque()).append(now)


def retry_words(wait_s: float) -> str:
    seconds = max(int(wait_s) + 1, 1)
    return f"{seconds} s" if seconds < 120 else f"{-(-seconds // 60)} minutes"
