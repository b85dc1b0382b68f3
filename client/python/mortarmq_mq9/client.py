"""The mq9 client over HTTP: ``POST <url>/mq9/<subject>`` (docs/mq9.md "Transport").

Standard library only (``http.client``, ``json``, ``asyncio``). Every
mailbox, message, agent and push subject, with typed results; consume()
and aconsume() long-poll FETCH for a consumer group; request() / reply()
use the conversation headers ``mq9-reply-to`` / ``mq9-correlation-id``.
A client may be used from several threads (one HTTP connection per call).
"""

from __future__ import annotations

import asyncio
import http.client
import json
import secrets
import socket
import threading
import time
import urllib.parse
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, Literal

from .consume import Backoff, consume_steps
from .errors import Mq9Error
from .models import CreatedMailbox, CreatedPush, Message, Priority, PushInfo, SentMessage
from .requests import Payload, checked_address as _checked, encode_payload, parse_retry_after, send_headers

Deliver = Literal["latest", "earliest", "from_time", "from_id"]

DEFAULT_TIMEOUT_S = 30.0
"""Time allowed for one answer, seconds; a long-poll FETCH adds its wait."""

CONSUME_MAX_WAIT_MS = 10_000
"""Long-poll wait of each FETCH of consume(), ms."""

REPLY_GROUP = "mq9-client-replies"
"""Consumer group request() reads its reply mailbox with (as the TypeScript client)."""

REPLY_MAILBOX_TTL_S = 600
"""TTL of the private reply mailbox, seconds."""


class Agents:
    """``client.agents``: the agent registry (``$mq9.AI.AGENT.*``, docs/agents.md)."""

    def __init__(self, client: "Mq9Client") -> None:
        self._client = client

    def register(self, card: dict[str, Any]) -> None:
        """Registers (or replaces) an A2A-style card; ``name`` required."""
        self._client.call("$mq9.AI.AGENT.REGISTER", card)

    def unregister(self, *, name: str | None = None, mailbox: str | None = None) -> bool:
        """Removes an agent by name (or by mailbox); True when one was removed."""
        body = {k: v for k, v in (("name", name), ("mailbox", mailbox)) if v is not None}
        return bool(self._client.call("$mq9.AI.AGENT.UNREGISTER", body).get("removed"))

    def report(self, report: dict[str, Any]) -> None:
        """Reports an agent's status (``name`` or ``mailbox`` plus any fields)."""
        self._client.call("$mq9.AI.AGENT.REPORT", report)

    def discover(self, *, text: str | None = None, semantic: str | None = None, limit: int | None = None, page: int | None = None) -> list[dict[str, Any]]:
        """Cards matching ``text`` (full text) or ``semantic`` (vector search), or every card; each as registered plus ``_mq9``."""
        body = {k: v for k, v in (("text", text), ("semantic", semantic), ("limit", limit), ("page", page)) if v is not None}
        return list(self._client.call("$mq9.AI.AGENT.DISCOVER", body).get("agents") or [])


class Mq9Client:
    """An mq9 client for one broker over HTTP.

    Args:
        url: the broker, ``http(s)://host[:port][/prefix]`` (default the local ``npm start``).
        token: sent as ``Authorization: Bearer`` (docs/tenants.md), or None on an open broker.
        timeout_s: time allowed for one answer, seconds.

    Every method raises :class:`Mq9Error` on failure.
    """

    def __init__(self, url: str = "http://127.0.0.1:8787", *, token: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        u = urllib.parse.urlsplit(url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise Mq9Error.client(f"broker URL {url}: use http:// or https://")
        self.url = url
        self._scheme, self._host, self._port = u.scheme, u.hostname, u.port
        self._prefix = u.path.rstrip("/")
        self._token = token
        self.timeout_s = timeout_s
        self.agents = Agents(self)
        self._reply_lock = threading.Lock()
        self._reply_box: tuple[str, float] | None = None
        self._stash: dict[str, Message] = {}
        self._closed = threading.Event()

    # ---- the transport ----

    def call(self, subject: str, payload: Payload = b"", *, headers: dict[str, str] | None = None, timeout_s: float | None = None) -> dict[str, Any]:
        """Sends one request to any subject and returns its JSON answer (``error`` empty).

        ``payload``: bytes, str (UTF-8) or a JSON value. Raises :class:`Mq9Error`:
        source ``broker`` for an answer with an error, ``connection`` / ``timeout`` for none.
        """
        if self._closed.is_set():
            raise Mq9Error.client("the client is closed")
        body = encode_payload(payload)
        limit = self.timeout_s if timeout_s is None else timeout_s
        conn_cls = http.client.HTTPSConnection if self._scheme == "https" else http.client.HTTPConnection
        conn = conn_cls(self._host, self._port, timeout=limit)
        h: dict[str, Any] = {"content-type": "application/octet-stream"}
        if self._token:
            h["authorization"] = f"Bearer {self._token}"
        for name, value in (headers or {}).items():
            h[name] = value.encode("utf-8")  # the broker reads header values as UTF-8 bytes
        path = f"{self._prefix}/mq9/{urllib.parse.quote(subject, safe='$.')}"
        try:
            conn.request("POST", path, body=body, headers=h)
            res = conn.getresponse()
            text = res.read().decode("utf-8", errors="replace")
        except (TimeoutError, socket.timeout):
            raise Mq9Error.timeout(f"no answer to {subject} within {round(limit * 1000)} ms", subject) from None
        except (OSError, http.client.HTTPException) as e:
            raise Mq9Error.connection(f"cannot reach the broker at {self.url}: {e}", subject) from None
        finally:
            conn.close()
        retry_after = parse_retry_after(res.getheader("retry-after"))
        try:
            answer = json.loads(text)
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            raise Mq9Error.from_reply(f"HTTP {res.status}: not an mq9 answer", res.status, retry_after, subject)
        error = answer.get("error")
        if error:
            raise Mq9Error.from_reply(str(error), res.status, retry_after, subject)
        return answer

    # ---- mailboxes and messages ----

    def create_mailbox(self, *, name: str | None = None, ttl: int | None = None) -> CreatedMailbox:
        """MAILBOX.CREATE: ``name`` (default: broker-generated, unguessable), ``ttl`` seconds (broker default 86 400; 0 = never)."""
        body: dict[str, Any] = {}
        if name is not None:
            body["name"] = _checked(name)
        if ttl is not None:
            body["ttl"] = ttl
        return CreatedMailbox(str(self.call("$mq9.AI.MAILBOX.CREATE", body)["mail_address"]))

    def send(
        self, address: str, payload: Payload, *, key: str | None = None, delay: int | None = None, ttl: int | None = None,
        tags: list[str] | None = None, priority: Priority | None = None, reply_to: str | None = None, correlation_id: str | None = None,
    ) -> SentMessage:
        """MSG.SEND with the ``mq9-*`` headers; ``delay``/``ttl`` seconds. ``msg_id`` is -1 for a delayed message."""
        h = send_headers(key=key, delay=delay, ttl=ttl, tags=tags, priority=priority, reply_to=reply_to, correlation_id=correlation_id)
        return SentMessage(int(self.call(f"$mq9.AI.MSG.SEND.{_checked(address)}", payload, headers=h)["msg_id"]))

    def fetch(
        self, address: str, *, group: str | None = None, deliver: Deliver | None = None, from_time: int | None = None,
        from_id: int | None = None, force_deliver: bool = False, num_msgs: int | None = None, max_wait_ms: int | None = None,
    ) -> list[Message]:
        """MSG.FETCH, in delivery order; with ``group`` stateful (acknowledge with ``message.ack()``). ``from_time`` unix seconds."""
        body: dict[str, Any] = {}
        if group is not None:
            body["group_name"] = group
        d = deliver or ("from_id" if from_id is not None else "from_time" if from_time is not None else None)
        if d is not None:
            body["deliver"] = d
        if from_time is not None:
            body["from_time"] = from_time
        if from_id is not None:
            body["from_id"] = from_id
        if force_deliver:
            body["force_deliver"] = True
        config = {k: v for k, v in (("num_msgs", num_msgs), ("max_wait_ms", max_wait_ms)) if v is not None}
        if config:
            body["config"] = config
        wait_s = min(max(max_wait_ms if max_wait_ms is not None else 500, 0), 30_000) / 1000
        r = self.call(f"$mq9.AI.MSG.FETCH.{_checked(address)}", body, timeout_s=self.timeout_s + wait_s)
        return [Message.from_wire(m, address, group, self) for m in r.get("messages") or []]

    def ack(self, address: str, group: str, msg_id: int) -> None:
        """MSG.ACK ``msg_id`` for ``group`` (cumulative inside the message's priority lane)."""
        self.call(f"$mq9.AI.MSG.ACK.{_checked(address)}", {"group_name": group, "mail_address": address, "msg_id": msg_id})

    def query(self, address: str, *, key: str | None = None, limit: int | None = None, since: int | None = None,
              tags: list[str] | None = None, correlation_id: str | None = None) -> list[Message]:
        """MSG.QUERY: the newest ``limit`` matches in msg_id order, moving no position; ``since`` unix seconds."""
        body = {k: v for k, v in (("key", key), ("limit", limit), ("since", since), ("tags", tags), ("correlation_id", correlation_id)) if v is not None}
        r = self.call(f"$mq9.AI.MSG.QUERY.{_checked(address)}", body)
        return [Message.from_wire(m, address, None, self) for m in r.get("messages") or []]

    def delete(self, address: str, msg_id: int) -> None:
        """MSG.DELETE one message."""
        if not isinstance(msg_id, int) or msg_id < 0:
            raise Mq9Error.client(f"msg_id must be a whole number ≥ 0, not {msg_id}")
        self.call(f"$mq9.AI.MSG.DELETE.{_checked(address)}.{msg_id}")

    # ---- push subscriptions ----

    def create_push(
        self, address: str, *, group: str, url: str, secret: str | None = None, max_attempts: int | None = None,
        deliver: Deliver | None = None, from_time: int | None = None, from_id: int | None = None,
        concurrency: int | None = None, timeout_ms: int | None = None,
    ) -> CreatedPush:
        """PUSH.CREATE (docs/push.md): the broker POSTs every message of ``group`` to ``url``, signed (:func:`verify_push_signature`)."""
        body: dict[str, Any] = {"group_name": group, "url": url}
        for k, v in (("secret", secret), ("max_attempts", max_attempts), ("concurrency", concurrency), ("timeout_ms", timeout_ms),
                     ("from_time", from_time), ("from_id", from_id)):
            if v is not None:
                body[k] = v
        d = deliver or ("from_id" if from_id is not None else "from_time" if from_time is not None else None)
        if d is not None:
            body["deliver"] = d
        r = self.call(f"$mq9.AI.PUSH.CREATE.{_checked(address)}", body)
        return CreatedPush(str(r["push_id"]), r.get("secret"))

    def list_pushes(self, address: str) -> list[PushInfo]:
        """PUSH.LIST: the mailbox's subscriptions with their counters."""
        return [PushInfo.from_wire(p) for p in self.call(f"$mq9.AI.PUSH.LIST.{_checked(address)}", {}).get("pushes") or []]

    def delete_push(self, address: str, push_id: str) -> None:
        """PUSH.DELETE; the group stays at its ack floors."""
        self.call(f"$mq9.AI.PUSH.DELETE.{_checked(address)}", {"push_id": push_id})

    # ---- consume ----

    def consume(self, address: str, *, group: str, deliver: Deliver | None = None, num_msgs: int | None = None,
                max_wait_ms: int = CONSUME_MAX_WAIT_MS, redelivery_delay_s: float = 1.0,
                on_error: Callable[[Mq9Error, float], None] | None = None) -> Iterator[Message]:
        """Iterates over ``address`` as ``group``, long-polling FETCH (at-least-once; ``message.ack()`` each).

        Retryable errors are waited out — the broker's ``Retry-After``, else
        exponential backoff 0.1 s → 10 s with jitter — and reported to
        ``on_error(error, delay_s)``; any other error is raised. Messages
        handed out and not acknowledged come again after ``redelivery_delay_s``.
        Ends when the client is closed (or the caller stops iterating).
        """
        _checked(address)
        kw = {"group": group, "deliver": deliver, "num_msgs": num_msgs, "max_wait_ms": max_wait_ms}
        steps = consume_steps(self, redelivery_delay_s, on_error)
        reply: Any = None
        try:
            step = next(steps)
            while True:
                kind, value = step
                reply = None
                if kind == "fetch":
                    try:
                        reply = self.fetch(address, **kw)
                    except Mq9Error as e:
                        reply = e
                elif kind == "sleep":
                    if self._closed.wait(value):
                        return
                else:
                    yield value
                step = steps.send(reply)
        except StopIteration:
            return

    async def aconsume(self, address: str, *, group: str, deliver: Deliver | None = None, num_msgs: int | None = None,
                       max_wait_ms: int = CONSUME_MAX_WAIT_MS, redelivery_delay_s: float = 1.0,
                       on_error: Callable[[Mq9Error, float], None] | None = None) -> AsyncIterator[Message]:
        """:meth:`consume` as an async iterator: each FETCH runs in a worker thread (``asyncio.to_thread``), waits use ``asyncio.sleep``."""
        _checked(address)
        kw = {"group": group, "deliver": deliver, "num_msgs": num_msgs, "max_wait_ms": max_wait_ms}
        steps = consume_steps(self, redelivery_delay_s, on_error)
        try:
            step = next(steps)
            while True:
                kind, value = step
                reply: Any = None
                if kind == "fetch":
                    try:
                        reply = await asyncio.to_thread(self.fetch, address, **kw)
                    except Mq9Error as e:
                        reply = e
                elif kind == "sleep":
                    await asyncio.sleep(value)
                else:
                    yield value
                step = steps.send(reply)
        except StopIteration:
            return

    # ---- request / reply ----

    def _reply_mailbox(self, timeout_s: float) -> str:
        """The private reply mailbox, created (broker-generated address) or replaced before it could expire under a request."""
        now = time.monotonic()
        box = self._reply_box
        if box is None or box[1] - now < max(timeout_s, REPLY_MAILBOX_TTL_S / 4):
            ttl = max(REPLY_MAILBOX_TTL_S, int(timeout_s * 4))
            box = (self.create_mailbox(ttl=ttl).mail_address, now + ttl)
            self._reply_box = box
            self._stash.clear()
        return box[0]

    def request(self, address: str, payload: Payload, *, timeout_s: float = DEFAULT_TIMEOUT_S, **send_options: Any) -> Message:
        """Sends ``payload`` with ``mq9-reply-to`` = this client's reply mailbox and a fresh 128-bit
        ``mq9-correlation-id``, and returns the answer carrying that id.

        Requests of one client from several threads take turns (one reply poller per client);
        answers that arrive for another correlation id are kept for it. Raises
        :class:`Mq9Error` source ``timeout`` (``no reply within N ms``) when none came in time; any SEND error.
        """
        _checked(address)
        with self._reply_lock:
            box = self._reply_mailbox(timeout_s)
            cid = secrets.token_hex(16)
            self.send(address, payload, reply_to=box, correlation_id=cid, **send_options)
            deadline = time.monotonic() + timeout_s
            backoff = Backoff()
            while True:
                if cid in self._stash:
                    return self._stash.pop(cid)
                left = deadline - time.monotonic()
                if left <= 0 or self._closed.is_set():
                    raise Mq9Error.timeout(f"no reply within {round(timeout_s * 1000)} ms", None)
                try:
                    batch = self.fetch(box, group=REPLY_GROUP, deliver="earliest", num_msgs=100, max_wait_ms=int(min(left, 10) * 1000))
                    backoff.reset()
                except Mq9Error as e:
                    if not e.retryable:
                        raise
                    time.sleep(min(backoff.next(), max(deadline - time.monotonic(), 0)))
                    continue
                for m in batch:
                    if m.correlation_id:
                        self._stash[m.correlation_id] = m
                if batch:
                    self.ack(box, REPLY_GROUP, batch[-1].msg_id)

    def reply(self, message: Message, payload: Payload, **send_options: Any) -> SentMessage:
        """Answers ``message``: sends ``payload`` to its ``reply_to`` with its ``correlation_id``.

        Raises :class:`Mq9Error` (``invalid_request``, client) when the message has no ``reply_to``.
        """
        if not message.reply_to:
            raise Mq9Error.client(f"msg_id {message.msg_id} of {message.mail_address} has no reply_to: there is nowhere to send a reply")
        return self.send(message.reply_to, payload, correlation_id=message.correlation_id, **send_options)

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed.is_set()

    def close(self) -> None:
        """Ends consumers at their next step; later calls raise."""
        self._closed.set()

    def __enter__(self) -> "Mq9Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
