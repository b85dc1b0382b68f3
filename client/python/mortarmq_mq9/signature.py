"""Push receivers' signature checks (docs/push.md "Verifying the signature").

Each scheme the broker signs with gets its own verifier here, beside the
others:

- ``mq9-signature: t=<unix s>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>``
  — :func:`verify_push_signature`, the broker's scheme.

A Standard Webhooks verifier (``webhook-id``, ``webhook-timestamp``,
``webhook-signature: v1,<base64>``) belongs beside it as its own function
taking the three headers.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time

PUSH_SIGNATURE_HEADER = "mq9-signature"
"""Header carrying the broker's signature."""

PUSH_SIGNATURE_TOLERANCE_S = 300
"""Default largest distance between the header's ``t`` and the receiver's clock, seconds."""

_TIMESTAMP = re.compile(r"^[0-9]{1,12}$")
_V1 = re.compile(r"^[0-9a-f]{64}$")


def parse_push_signature(header: str) -> tuple[int, list[str]] | None:
    """A parsed ``mq9-signature``: its timestamp (unix seconds) and every ``v1`` (hex), or None when malformed."""
    t: int | None = None
    v1: list[str] = []
    for part in header.split(","):
        key, eq, value = part.partition("=")
        if not eq:
            return None
        key, value = key.strip(), value.strip()
        if key == "t":
            if not _TIMESTAMP.match(value):
                return None
            t = int(value)
        elif key == "v1" and _V1.match(value):
            v1.append(value)
    return None if t is None or not v1 else (t, v1)


def verify_push_signature(
    secret: str,
    header: str,
    body: bytes,
    *,
    now_s: float | None = None,
    tolerance_s: float = PUSH_SIGNATURE_TOLERANCE_S,
) -> bool:
    """Checks a push request's ``mq9-signature`` header.

    True when the header carries a ``v1`` HMAC-SHA256 of ``b"<t>." + body``
    under ``secret`` (its UTF-8 bytes) and ``t`` is within ``tolerance_s``
    seconds of ``now_s`` (default: now). ``body`` is the raw request body,
    unparsed. Compared in constant time (:func:`hmac.compare_digest`); a
    malformed header is False, never an exception.
    """
    parsed = parse_push_signature(header)
    if parsed is None:
        return False
    t, candidates = parsed
    now = time.time() if now_s is None else now_s
    if abs(now - t) > tolerance_s:
        return False
    want = hmac.new(secret.encode("utf-8"), f"{t}.".encode("ascii") + bytes(body), hashlib.sha256).hexdigest()
    ok = False
    for got in candidates:
        ok = hmac.compare_digest(want, got) or ok
    return ok
