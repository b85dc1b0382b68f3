"""Push receivers' signature checks (docs/push.md "Verifying the signature").

Each scheme the broker signs with gets its own verifier here, beside the
others:

- Standard Webhooks: ``webhook-id``, ``webhook-timestamp``,
  ``webhook-signature: v1,<base64 HMAC-SHA256(key, "<id>.<t>.<body>")>``,
  where ``webhook-id`` is derived from the message's mq9 headers —
  :func:`verify_push_webhook`, the current scheme.
- ``mq9-signature: t=<unix s>,v1=<hex HMAC-SHA256(key, "<t>.<body>")>``
  — :func:`verify_push_signature`, deprecated (timestamp and body only).

The key of a ``whsec_<base64>`` secret (what the broker generates) is its
decoded bytes; of any other secret, its UTF-8 bytes (:func:`push_key`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import time
from collections.abc import Callable, Mapping

PUSH_SIGNATURE_HEADER = "mq9-signature"
"""Header carrying the broker's signature."""

PUSH_SIGNATURE_TOLERANCE_S = 300
"""Default largest distance between the header's ``t`` and the receiver's clock, seconds."""

WEBHOOK_SECRET_PREFIX = "whsec_"
"""Prefix of a Standard Webhooks secret: the rest is the key in standard base64."""

SIGNED_PUSH_HEADERS = (
    "mq9-mail-address", "mq9-msg-id", "mq9-priority", "mq9-key", "mq9-tags", "mq9-create-time", "mq9-reply-to", "mq9-correlation-id",
)
"""The mq9 headers the ``webhook-id`` covers, in order (docs/push.md)."""

_WEBHOOK_ID_SCHEME = "mq9-push-v1"
_BASE64 = re.compile(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$")
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
    under the key of ``secret`` (:func:`push_key`) and ``t`` is within ``tolerance_s``
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
    want = hmac.new(push_key(secret), f"{t}.".encode("ascii") + bytes(body), hashlib.sha256).hexdigest()
    ok = False
    for got in candidates:
        ok = hmac.compare_digest(want, got) or ok
    return ok


def push_key(secret: str) -> bytes:
    """The HMAC key of ``secret``: the decoded bytes of ``whsec_<base64>``, else the secret's UTF-8 bytes."""
    if secret.startswith(WEBHOOK_SECRET_PREFIX):
        rest = secret[len(WEBHOOK_SECRET_PREFIX):]
        if _BASE64.match(rest):
            try:
                key = base64.b64decode(rest, validate=True)
            except (binascii.Error, ValueError):
                key = b""
            if key:
                return key
    return secret.encode("utf-8")


def push_webhook_id(header: Callable[[str], str | None]) -> str:
    """The ``webhook-id`` the broker sends for a push with these mq9 headers (``header(name)`` looks one up)."""
    text = _WEBHOOK_ID_SCHEME
    for name in SIGNED_PUSH_HEADERS:
        text += f"\n{name}:{header(name) or ''}"
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "msg_" + base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def verify_push_webhook(
    secret: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    now_s: float | None = None,
    tolerance_s: float = PUSH_SIGNATURE_TOLERANCE_S,
) -> bool:
    """Checks a push request the Standard Webhooks way, and that its mq9 headers are the signed ones.

    True when ``webhook-signature`` holds a ``v1`` HMAC-SHA256 of
    ``"<webhook-id>.<webhook-timestamp>." + body`` under the key of ``secret``,
    the timestamp is within ``tolerance_s`` seconds of ``now_s`` (default:
    now), and ``webhook-id`` is the id of the request's mq9 headers
    (:func:`push_webhook_id`). ``headers`` is looked up case-insensitively;
    ``body`` is the raw request body. Constant-time; never raises (False).
    """
    lower = {k.lower(): v for k, v in headers.items()}
    msg_id, ts, sigs = lower.get("webhook-id"), lower.get("webhook-timestamp"), lower.get("webhook-signature")
    if not msg_id or not ts or not sigs or not _TIMESTAMP.match(ts):
        return False
    t = int(ts)
    now = time.time() if now_s is None else now_s
    if abs(now - t) > tolerance_s:
        return False
    mac = hmac.new(push_key(secret), f"{msg_id}.{t}.".encode("utf-8") + bytes(body), hashlib.sha256).digest()
    want = "v1," + base64.b64encode(mac).decode("ascii")
    ok = False
    for got in sigs.split(" "):
        ok = hmac.compare_digest(want, got) or ok
    return ok and hmac.compare_digest(msg_id, push_webhook_id(lower.get))
