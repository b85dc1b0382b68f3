"""consume()'s loop, apart from how it waits (threads or asyncio): long-poll FETCH for a consumer
group, hand messages out in delivery order, redeliver what was not acknowledged after a delay,
wait out retryable errors (``Retry-After``, else exponential backoff with jitter)."""

from __future__ import annotations

import random
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

from .errors import Mq9Error
from .models import Message, SentMessage

if TYPE_CHECKING:
    from .client import Mq9Client
    from .requests import Payload


class Backoff:
    """Exponential backoff with jitter: the n-th delay is drawn from [b/2, b], b = min(max_s, initial_s · 2ⁿ)."""

    def __init__(self, initial_s: float = 0.1, max_s: float = 10.0) -> None:
        self.initial_s, self.max_s, self.attempt = initial_s, max_s, 0

    def next(self) -> float:
        """The next delay, seconds."""
        bound = min(self.max_s, self.initial_s * 2 ** min(self.attempt, 30))
        self.attempt += 1
        return bound / 2 + bound / 2 * random.random()

    def reset(self) -> None:
        """Starts over after a success."""
        self.attempt = 0


def consume_steps(client: "Mq9Client", redelivery_delay_s: float, on_error: Callable[[Mq9Error, float], None] | None) -> Generator[tuple[str, Any], Any, None]:
    """The consume loop as steps: ("fetch", None) asks the caller to run one FETCH and send its result
    (a list, or an Mq9Error) back; ("sleep", s) to wait; ("yield", message) to hand a message out."""
    backoff = Backoff()
    handed_out: set[int] = set()
    acked: set[int] = set()
    while not client.closed:
        result = yield ("fetch", None)
        if isinstance(result, Mq9Error):
            if not result.retryable:
                raise result
            delay = result.retry_after_s if result.retry_after_s is not None else backoff.next()
            if on_error:
                on_error(result, delay)
            yield ("sleep", delay)
            continue
        backoff.reset()
        batch: list[Message] = result
        if not batch:
            continue
        if all(m.msg_id in handed_out and m.msg_id not in acked for m in batch):
            yield ("sleep", redelivery_delay_s)
        handed_out = {m.msg_id for m in batch}
        acked.clear()
        for m in batch:
            m._client = _AckRecorder(client, acked)  # type: ignore[assignment]
            yield ("yield", m)


class _AckRecorder:
    """Stands in for the client inside consumed messages: records what ``ack()`` acknowledged."""

    def __init__(self, client: "Mq9Client", acked: set[int]) -> None:
        self._client, self._acked = client, acked

    def ack(self, address: str, group: str, msg_id: int) -> None:
        self._client.ack(address, group, msg_id)
        self._acked.add(msg_id)

    def reply(self, message: Message, payload: Payload, **send_options: Any) -> SentMessage:
        return self._client.reply(message, payload, **send_options)
