"""The Python client against the real local broker (tests/broker.py): consume and
aconsume, request/reply between two clients, push delivery verified with
verify_push_signature, UTF-8 keys and tags; and consume's waiting on
retryable errors (Retry-After, backoff)."""

import asyncio
import http.server
import json
import secrets
import threading
import unittest

from mortarmq_mq9 import Mq9Client, Mq9Error, PUSH_SIGNATURE_HEADER, verify_push_signature, verify_push_webhook

from .broker import broker


def name(label: str) -> str:
    return f"py.{label}.{secrets.token_hex(4)}"


class AgainstTheBroker(unittest.TestCase):
    def setUp(self) -> None:
        url, token = broker()
        self.mq = Mq9Client(url, token=token)
        self.addCleanup(self.mq.close)

    def test_consume_hands_out_in_priority_order_and_redelivers_what_was_not_acknowledged(self) -> None:
        box = self.mq.create_mailbox(name=name("consume"), ttl=600).mail_address
        self.mq.send(box, "n")
        self.mq.send(box, "u", priority="urgent")
        self.mq.send(box, {"c": 1}, priority="critical")
        seen = []
        for m in self.mq.consume(box, group="workers", deliver="earliest", max_wait_ms=500, redelivery_delay_s=0.2):
            seen.append((m.msg_id, m.priority, m.payload))
            if m.msg_id != 0 or len(seen) > 3:
                m.ack()  # msg 0 is acknowledged only when it comes the second time
            if len(seen) == 4:
                break
        self.assertEqual(seen, [(2, "critical", b'{"c":1}'), (1, "urgent", b"u"), (0, "normal", b"n"), (0, "normal", b"n")])
        self.assertEqual(self.mq.fetch(box, group="workers", max_wait_ms=0), [])

    def test_aconsume_is_an_async_iterator(self) -> None:
        box = self.mq.create_mailbox(name=name("aconsume"), ttl=600).mail_address
        for i in range(3):
            self.mq.send(box, f"m{i}")

        async def take() -> list[str]:
            got = []
            async for m in self.mq.aconsume(box, group="g", deliver="earliest", max_wait_ms=500):
                got.append(m.text())
                await asyncio.to_thread(m.ack)
                if len(got) == 3:
                    break
            return got

        self.assertEqual(asyncio.run(take()), ["m0", "m1", "m2"])

    def test_request_and_reply_between_two_agents(self) -> None:
        url, token = broker()
        service = Mq9Client(url, token=token)
        inbox = service.create_mailbox(ttl=600).mail_address

        def serve() -> None:
            for m in service.consume(inbox, group="svc", deliver="earliest", max_wait_ms=500):
                m.reply(f"échoed: {m.text()}")
                m.ack()

        t = threading.Thread(target=serve, daemon=True)
        t.start()
        try:
            first = self.mq.request(inbox, "ping", timeout_s=20)
            second = self.mq.request(inbox, "pong", timeout_s=20)
        finally:
            service.close()
        t.join(15)
        self.assertEqual((first.text(), second.text()), ("échoed: ping", "échoed: pong"))
        self.assertRegex(first.correlation_id or "", r"^[0-9a-f]{32}$")
        self.assertNotEqual(first.correlation_id, second.correlation_id)
        with self.assertRaises(Mq9Error) as nobody:
            self.mq.request(self.mq.create_mailbox(ttl=60).mail_address, "anyone?", timeout_s=1)
        self.assertEqual((nobody.exception.kind, nobody.exception.source, nobody.exception.message), ("unavailable", "timeout", "no reply within 1000 ms"))

    def test_keys_and_tags_are_utf8_text(self) -> None:
        box = self.mq.create_mailbox(name=name("utf8"), ttl=600).mail_address
        self.mq.send(box, "x", key="clé-日本", tags=["été", "tag two"])
        [m] = self.mq.query(box)
        self.assertEqual((m.key, m.tags), ("clé-日本", ["été", "tag two"]))
        with self.assertRaises(Mq9Error) as bad:
            self.mq.send(box, "x", key="line\nbreak")
        self.assertEqual((bad.exception.kind, bad.exception.source), ("invalid_request", "client"))

    def test_a_push_arrives_signed_and_verifies(self) -> None:
        got: list[tuple[str, bytes]] = []
        arrived = threading.Event()

        class Receiver(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                got.append((self.headers.get(PUSH_SIGNATURE_HEADER, ""), body, {k: v for k, v in self.headers.items()}))
                self.send_response(204)
                self.end_headers()
                arrived.set()

            def log_message(self, *args: object) -> None:
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        box = self.mq.create_mailbox(name=name("push"), ttl=600).mail_address
        created = self.mq.create_push(box, group="hook", url=f"http://127.0.0.1:{server.server_port}/hook", deliver="earliest")
        self.assertIsNotNone(created.secret)
        self.mq.send(box, "pushed")
        self.assertTrue(arrived.wait(30), "no push arrived")
        header, body, headers = got[0]
        secret = created.secret or ""
        self.assertTrue(secret.startswith("whsec_"))
        # the current scheme: Standard Webhooks, with the mq9 headers bound into webhook-id
        self.assertTrue(verify_push_webhook(secret, headers, body))
        self.assertFalse(verify_push_webhook(secret, headers, body + b"x"))
        self.assertFalse(verify_push_webhook(secret, {**headers, "mq9-msg-id": "999"}, body))  # a replay with another msg id
        self.assertFalse(verify_push_webhook("whsec_" + "A" * 44, headers, body))
        # the deprecated header, same key
        self.assertTrue(verify_push_signature(secret, header, body))
        self.assertFalse(verify_push_signature(secret, header, body + b"x"))
        self.assertFalse(verify_push_signature("another-secret-0123456789abcdef0123", header, body))
        self.mq.delete_push(box, created.push_id)


class RetryableErrors(unittest.TestCase):
    """consume() waits out retryable errors: the broker's Retry-After when it sends one, else backoff."""

    def test_retry_after_is_honoured_then_messages_flow(self) -> None:
        answers = [
            (429, {"retry-after": "1"}, {"error": "publish rate limit exceeded for this mailbox, retry later"}),
            (503, {}, {"error": "unavailable: restarting"}),
            (200, {}, {"error": "", "messages": [{"msg_id": 0, "payload": "aGk=", "priority": "normal", "create_time": 1, "key": None, "tags": []}]}),
        ]

        class Fake(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", 0)))
                status, headers, body = answers.pop(0) if answers else (200, {}, {"error": "", "messages": []})
                data = json.dumps(body).encode()
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Fake)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        mq = Mq9Client(f"http://127.0.0.1:{server.server_port}")
        errors: list[tuple[str, bool, float]] = []
        for m in mq.consume("box", group="g", on_error=lambda e, delay: errors.append((e.kind, e.retryable, delay))):
            self.assertEqual(m.text(), "hi")
            break
        self.assertEqual(errors[0], ("quota_exceeded", True, 1.0))
        self.assertEqual(errors[1][:2], ("unavailable", True))
        self.assertTrue(0.05 <= errors[1][2] <= 0.1, errors[1])  # first backoff step: [0.05, 0.1] s

    def test_a_broker_that_is_not_there_is_retried_until_the_client_closes(self) -> None:
        mq = Mq9Client("http://127.0.0.1:1")
        delays: list[float] = []

        def on_error(e: Mq9Error, delay: float) -> None:
            self.assertEqual((e.kind, e.source, e.retryable), ("unavailable", "connection", True))
            delays.append(delay)
            if len(delays) == 4:
                mq.close()

        self.assertEqual(list(mq.consume("box", group="g", on_error=on_error)), [])
        self.assertEqual(len(delays), 4)
        bounds = [(0.05, 0.1), (0.1, 0.2), (0.2, 0.4), (0.4, 0.8)]
        for d, (lo, hi) in zip(delays, bounds):
            self.assertTrue(lo <= d <= hi, (d, lo, hi))

    def test_an_error_that_will_not_pass_ends_consume(self) -> None:
        url, token = broker()
        mq = Mq9Client(url, token=token)
        with self.assertRaises(Mq9Error) as gone:
            next(iter(mq.consume(name("nobody"), group="g")))
        self.assertEqual((gone.exception.kind, gone.exception.retryable), ("mailbox_not_found", False))
