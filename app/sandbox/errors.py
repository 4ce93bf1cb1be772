"""Errors of the sandbox: what the user sees is kept apart from what is logged."""

from __future__ import annotations


class SandboxError(Exception):
    """A session could not be started or kept.

    `message` is for the learner; `reason` is a stable machine-readable word; `log_message` is for
    the operator's log; `status_code` is the HTTP status a handshake refusal uses.
    """

    def __init__(
        self, message: str, *, reason: str, log_message: str = "", status_code: int = 500,
        retry_after_s: int | None = None,
    ) -> None:  # fmt: skip
        super().__init__(message)
        self.message = message
        self.reason = reason
        self.log_message = log_message or message
        self.status_code = status_code
        self.retry_after_s = retry_after_s


class CapacityError(SandboxError):
    """A new session does not fit now: the playground, or this learner's share of it, is full.

    `situation` says which place is taken and `advice` (an imperative, without a full stop) what the
    learner may do meanwhile. `message` adds when to try again, for a reader told once (an HTTP
    refusal); a console, which tries again by itself and says so, shows the first two instead.
    """

    def __init__(self, situation: str, *, reason: str, advice: str = "", retry_after_s: int = 30,
                 status_code: int = 503) -> None:  # fmt: skip
        if advice:
            message = f"{situation} {advice}, then try again in {retry_after_s} s."
        else:
            message = f"{situation} Try again in {retry_after_s} s."
        super().__init__(message, reason=reason, status_code=status_code, retry_after_s=retry_after_s)
        self.situation = situation
        self.advice = advice


class OutputLimitError(SandboxError):
    """A server wrote a line or a total over its cap."""

    def __init__(self, message: str) -> None:
        super().__init__(message, reason="output_limit", status_code=500)
