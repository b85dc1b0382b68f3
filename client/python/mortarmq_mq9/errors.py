"""The one error type of the client, classified like the TypeScript client's.

A failed request keeps the broker's mq9 ``error`` string unchanged and is
classified into a small set of kinds read from that text (docs/mq9.md
"Errors and HTTP status"); the HTTP status decides only for texts this
client does not know.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Mq9ErrorKind = Literal[
    "mailbox_not_found",
    "mailbox_exists",
    "message_not_found",
    "quota_exceeded",
    "unauthorized",
    "invalid_request",
    "unavailable",
]
"""What went wrong, in terms a caller acts on (the TypeScript client's ``Mq9ErrorKind``)."""

Mq9ErrorSource = Literal["broker", "connection", "timeout", "client"]
"""Where it came from: an answer with an error, no answer, no answer in time, refused before sending."""


class Mq9Error(Exception):
    """A failed mq9 request, or a call refused before sending.

    Attributes:
        kind: see :data:`Mq9ErrorKind`.
        retryable: True when the same request may succeed later unchanged.
        source: see :data:`Mq9ErrorSource`.
        error: the broker's ``error`` text (``source == "broker"``), else None.
        status: the HTTP status of the answer, or None.
        retry_after_s: the broker's ``Retry-After``, seconds, or None.
        subject: the request's subject, or None.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: Mq9ErrorKind,
        retryable: bool,
        source: Mq9ErrorSource,
        status: int | None = None,
        retry_after_s: float | None = None,
        subject: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.kind: Mq9ErrorKind = kind
        self.retryable = retryable
        self.source: Mq9ErrorSource = source
        self.status = status
        self.retry_after_s = retry_after_s
        self.subject = subject

    @property
    def error(self) -> str | None:
        """The broker's ``error`` text for ``source == "broker"``, else None."""
        return self.message if self.source == "broker" else None

    @classmethod
    def from_reply(cls, text: str, status: int | None, retry_after_s: float | None, subject: str) -> "Mq9Error":
        """The error of a broker answer whose ``error`` is ``text``."""
        kind, retryable = classify_mq9_error(text, status)
        return cls(text, kind=kind, retryable=retryable, source="broker", status=status, retry_after_s=retry_after_s, subject=subject)

    @classmethod
    def connection(cls, message: str, subject: str | None) -> "Mq9Error":
        """The broker could not be reached, or the connection failed before an answer."""
        return cls(message, kind="unavailable", retryable=True, source="connection", subject=subject)

    @classmethod
    def timeout(cls, message: str, subject: str | None) -> "Mq9Error":
        """No answer in time."""
        return cls(message, kind="unavailable", retryable=True, source="timeout", subject=subject)

    @classmethod
    def client(cls, message: str) -> "Mq9Error":
        """A call refused before anything was sent (always ``invalid_request``)."""
        return cls(message, kind="invalid_request", retryable=False, source="client")

    def __repr__(self) -> str:
        return f"Mq9Error({self.message!r}, kind={self.kind!r}, retryable={self.retryable}, source={self.source!r})"


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str]
    kind: Mq9ErrorKind
    retryable: bool


def _rule(pattern: str, kind: Mq9ErrorKind, retryable: bool, flags: int = re.S) -> _Rule:
    return _Rule(re.compile(pattern, flags), kind, retryable)


# The broker's error texts → kinds, first match wins (the same table as client/mq9/errors.ts).
_RULES: tuple[_Rule, ...] = (
    _rule(r"^mailbox .* does not exist$", "mailbox_not_found", False),
    _rule(r"^mailbox .* already exists$", "mailbox_exists", False),
    _rule(r"^message not found$", "message_not_found", False),
    _rule(r"^unauthorized: ", "unauthorized", False),
    _rule(r"^Authorization Violation$", "unauthorized", False, re.I),
    _rule(r"^publish rate limit exceeded ", "quota_exceeded", True),
    _rule(r"^broker overloaded, retry later: ", "quota_exceeded", True),
    _rule(r"^mailbox .* already holds \d+ waiting FETCH requests$", "quota_exceeded", True),
    _rule(r"^(storage|mailbox) quota exceeded: ", "quota_exceeded", False),
    _rule(r"^mailbox .* already has \d+ consumer groups: ", "quota_exceeded", False),
    _rule(r"^agent registry is full", "quota_exceeded", False),
    _rule(r"^push subscription limit reached: ", "quota_exceeded", False),
    _rule(r"^mailbox .* already has \d+ push subscriptions: ", "quota_exceeded", False),
    _rule(r"^unavailable: ", "unavailable", True),
    _rule(r"^mailbox temporarily unavailable, retry: ", "unavailable", True),
    _rule(r"^semantic search is unavailable: ", "unavailable", True),
    _rule(r"^Authorization Unavailable$", "unavailable", True, re.I),
    _rule(r"^internal error: ", "unavailable", True),
)


def classify_mq9_error(text: str, status: int | None = None) -> tuple[Mq9ErrorKind, bool]:
    """The ``(kind, retryable)`` of a broker ``error`` text.

    Unknown texts fall back on the HTTP status (401 unauthorized; 429
    quota_exceeded, retryable; 5xx unavailable, retryable), else
    ``invalid_request``.
    """
    for r in _RULES:
        if r.pattern.search(text):
            return r.kind, r.retryable
    if status == 401:
        return "unauthorized", False
    if status == 429:
        return "quota_exceeded", True
    if status is not None and status >= 500:
        return "unavailable", True
    return "invalid_request", False
