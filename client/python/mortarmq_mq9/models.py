"""Typed results of the client (dataclasses), in the broker's reply shapes (docs/mq9.md, docs/push.md)."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from .client import Mq9Client

Priority = Literal["critical", "urgent", "normal"]
"""Message priority (mq9 ``mq9-priority``), delivered in this order."""


@dataclass(frozen=True)
class CreatedMailbox:
    """MAILBOX.CREATE's answer."""

    mail_address: str


@dataclass(frozen=True)
class SentMessage:
    """MSG.SEND's answer: the message's id, -1 for a delayed message (it gets its id when visible)."""

    msg_id: int


@dataclass(frozen=True)
class CreatedPush:
    """PUSH.CREATE's answer: the subscription's id, and its secret when the broker generated it (shown only here)."""

    push_id: str
    secret: str | None = None


@dataclass(frozen=True)
class DeadLetterInfo:
    """What a dead-letter copy (in ``<mail_address>.dlq``) carries about its failed push."""

    mail_address: str
    msg_id: int
    push_id: str
    group_name: str
    reason: str
    attempts: int
    time: int
    """When it was dead-lettered, unix seconds."""


@dataclass(frozen=True)
class PushInfo:
    """One push subscription as PUSH.LIST shows it (never its secret)."""

    push_id: str
    group_name: str
    url: str
    max_attempts: int
    concurrency: int
    timeout_ms: int
    state: Literal["active", "retrying"]
    delivered: int
    failed: int
    dead_lettered: int
    last_error: str
    last_success_time: int | None
    last_failure_time: int | None
    created_time: int
    in_flight: int
    backlog: int

    @classmethod
    def from_wire(cls, d: dict[str, Any]) -> "PushInfo":
        """From the broker's JSON object (unknown fields ignored)."""
        return cls(**{k: d.get(k) for k in cls.__dataclass_fields__})


@dataclass
class Message:
    """A message of a FETCH or QUERY answer.

    ``payload`` is the bytes as sent; ``create_time`` unix seconds;
    ``mail_address`` the mailbox it was read from and ``group`` the consumer
    group that fetched it (None for QUERY and stateless FETCH).
    """

    msg_id: int
    payload: bytes
    priority: Priority
    create_time: int
    key: str | None
    tags: list[str]
    reply_to: str | None
    correlation_id: str | None
    dead_letter: DeadLetterInfo | None
    mail_address: str
    group: str | None
    _client: "Mq9Client | None" = field(default=None, repr=False, compare=False)

    @classmethod
    def from_wire(cls, d: dict[str, Any], mail_address: str, group: str | None, client: "Mq9Client | None") -> "Message":
        """From one element of the broker's ``messages`` list (payload base64)."""
        dl = d.get("dead_letter")
        return cls(
            msg_id=int(d["msg_id"]),
            payload=base64.b64decode(d.get("payload", "")),
            priority=d.get("priority", "normal"),
            create_time=int(d.get("create_time", 0)),
            key=d.get("key"),
            tags=list(d.get("tags") or []),
            reply_to=d.get("reply_to"),
            correlation_id=d.get("correlation_id"),
            dead_letter=DeadLetterInfo(**dl) if isinstance(dl, dict) else None,
            mail_address=mail_address,
            group=group,
            _client=client,
        )

    def text(self) -> str:
        """The payload as UTF-8 text."""
        return self.payload.decode("utf-8")

    def json(self) -> Any:
        """The payload parsed as JSON. Raises ``ValueError`` when it is not JSON."""
        return json.loads(self.payload)

    def ack(self) -> None:
        """Acknowledges this message for the group that fetched it (MSG.ACK).

        Raises :class:`Mq9Error` (``invalid_request``) when it was not fetched for a group; any ACK error.
        """
        from .errors import Mq9Error

        if self.group is None or self._client is None:
            raise Mq9Error.client("ack() needs a message fetched for a consumer group")
        self._client.ack(self.mail_address, self.group, self.msg_id)

    def reply(self, payload: "bytes | str | Any", **send_options: Any) -> SentMessage:
        """Sends ``payload`` to this message's ``reply_to`` with its ``correlation_id`` (see :meth:`Mq9Client.reply`)."""
        from .errors import Mq9Error

        if self._client is None:
            raise Mq9Error.client("reply() needs a message read through a client")
        return self._client.reply(self, payload, **send_options)
