"""Secrets that people type or send (the instructor token, the access code, join and resume codes):
compared safely whatever bytes arrive, and wrong guesses counted per client address.

A presented secret is checked first, and a right one always passes: a class behind one school's NAT
address gets in even while someone behind the same address guesses. Only wrong ones count, per kind
of secret and client address, in a sliding window; past the budget, each further wrong one is
answered 429 at once (nothing is held open), with Retry-After. Guessing then goes no faster than the
address's requests (PLAYGROUND_REQUESTS_PER_S_PER_ADDRESS): the codes are long enough for that
(docs/hosting.md, "Security").
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections import deque

from app.relay.rates import Recent

# Failures are counted over this window (PLAYGROUND_FAILED_ATTEMPTS_PER_ADDRESS in it).
FAILURE_WINDOW_S = 600.0
# (kind, address) pairs remembered at most: past it, the one that failed longest ago is forgotten.
ADDRESSES_KEPT = 10_000


def same_secret(presented: str, expected: str) -> bool:
    """Constant-time comparison of any two strings (non-ASCII and unpaired surrogates included)."""
    if not expected:
        return False
    a = presented.encode("utf-8", errors="surrogatepass")
    b = expected.encode("utf-8", errors="surrogatepass")
    return hmac.compare_digest(hashlib.sha256(a).digest(), hashlib.sha256(b).digest())


class FailureThrottle:
    """Wrong attempts per (kind, address): `limit` in the window are answered as wrong; past it, 429."""

    def __init__(self, limit: int, window_s: float = FAILURE_WINDOW_S, kept: int = ADDRESSES_KEPT) -> None:
        self.limit = limit
        self.window_s = window_s
        # The newest `limit` failures of each key: enough to tell whether one more is past the budget.
        self._failures: Recent[tuple[str, str], deque[float]] = Recent(kept)

    def failed(self, kind: str, address: str) -> float | None:
        """Count a wrong attempt. None while the address is within its budget; past it, the seconds
        until it is within it again (the attempt is answered 429)."""
        now = time.monotonic()
        key = (kind, address)
        failures = self._failures.get(key)
        if failures is None:
            failures = self._failures.add(key, deque(maxlen=max(self.limit, 1)))
        over = len(failures) >= self.limit and (not failures or now - failures[0] <= self.window_s)
        failures.append(now)
        if not over:
            return None
        return max(self.window_s - (now - failures[0]), 1.0)

    def __len__(self) -> int:
        return len(self._failures)


def retry_words(wait_s: float) -> str:
    seconds = max(int(wait_s) + 1, 1)
    return f"{seconds} s" if seconds < 120 else f"{-(-seconds // 60)} minutes"
