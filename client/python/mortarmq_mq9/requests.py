"""Pure parts of a request: mail_address rules, payload bytes, ``mq9-*`` headers, ``Retry-After``
(docs/mq9.md "Transport"); the same rules and texts as the TypeScript client and the broker."""

from __future__ import annotations

import email.utils
import json
import re
import time
from typing import Any

from .errors import Mq9Error
from .models import Priority

Payload = bytes | bytearray | memoryview | str | Any
"""A message payload: bytes as they are, a str as UTF-8, anything else as JSON."""

MAIL_ADDRESS_MAX_CHARS = 128


def mail_address_problem(s: str) -> str | None:
    """Why ``s`` is not a valid mail_address (the broker's rules and words), or None."""
    if not s:
        return "must not be empty"
    if len(s) > MAIL_ADDRESS_MAX_CHARS:
        return f"longer than {MAIL_ADDRESS_MAX_CHARS} characters"
    for ch in s:
        if not ("a" <= ch <= "z" or "0" <= ch <= "9" or ch == "."):
            if "A" <= ch <= "Z":
                return f'contains upper-case "{ch}" (addresses are lower case)'
            return f'contains "{ch}" (allowed: a-z, 0-9 and ".")'
    if s.startswith("."):
        return 'starts with "."'
    if s.endswith("."):
        return 'ends with "."'
    if ".." in s:
        return 'contains ".."'
    return None


def _echo(s: str, limit: int = 128) -> str:
    return s if len(s) <= limit else s[:limit] + "…"


def checked_address(address: str) -> str:
    """`address`, or :class:`Mq9Error` (client) with the broker's text when it is not a valid mail_address."""
    problem = mail_address_problem(address)
    if problem:
        raise Mq9Error.client(f'invalid mail_address "{_echo(address)}": {problem}')
    return address


def encode_payload(payload: Payload) -> bytes:
    """The bytes sent for ``payload`` (bytes as is, str as UTF-8, else JSON)."""
    if isinstance(payload, (bytes, bytearray, memoryview)):
        return bytes(payload)
    if isinstance(payload, str):
        return payload.encode("utf-8")
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def parse_retry_after(value: str | None, now_s: float | None = None) -> float | None:
    """``Retry-After`` (delay seconds or an HTTP date) in seconds, or None."""
    if value is None:
        return None
    v = value.strip()
    if v.isdigit():
        return float(v)
    try:
        at = email.utils.parsedate_to_datetime(v).timestamp()
    except (TypeError, ValueError):
        return None
    return max(0.0, at - (time.time() if now_s is None else now_s))


def send_headers(
    *, key: str | None = None, delay: int | None = None, ttl: int | None = None, tags: list[str] | None = None,
    priority: Priority | None = None, reply_to: str | None = None, correlation_id: str | None = None,
) -> dict[str, str]:
    """The ``mq9-*`` headers of SEND options. Raises :class:`Mq9Error` (client) for a tag with a comma or a line break in a value."""
    h: dict[str, str] = {}
    if key is not None:
        h["mq9-key"] = key
    if delay is not None:
        h["mq9-delay"] = str(delay)
    if ttl is not None:
        h["mq9-ttl"] = str(ttl)
    if tags:
        for t in tags:
            if "," in t:
                raise Mq9Error.client(f'tag "{_echo(t)}" contains a comma: mq9-tags is a comma list, so it would arrive as two tags')
        h["mq9-tags"] = ",".join(tags)
    if priority is not None:
        h["mq9-priority"] = priority
    if reply_to is not None:
        h["mq9-reply-to"] = reply_to
    if correlation_id is not None:
        h["mq9-correlation-id"] = correlation_id
    for name, value in h.items():
        if re.search(r"[\r\n]", value):
            raise Mq9Error.client(f"{name} contains a line break, which a header value cannot carry")
    return h
