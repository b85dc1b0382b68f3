"""verify_push_signature() on fixed vectors (the TypeScript client's scheme, docs/push.md)."""

import hashlib
import hmac
import unittest

from mortarmq_mq9 import parse_push_signature, push_key, push_webhook_id, verify_push_signature, verify_push_webhook

SECRET = "whsec-test-secret-0123456789abcdef"
BODY = b'{"hello":"push"}'
T = 1767225600
# made with Node's crypto.createHmac (test/fixtures/mq9-package/scenario.ts holds the same vector)
HEADER = "t=1767225600,v1=c21d89c26ace594696004c77a4109b6ad47636af128fea1422ab170dcfa2e585"


class VerifyPushSignature(unittest.TestCase):
    def test_a_valid_signature_within_the_window(self) -> None:
        self.assertTrue(verify_push_signature(SECRET, HEADER, BODY, now_s=T + 10))
        self.assertTrue(verify_push_signature(SECRET, HEADER, BODY, now_s=T - 300))

    def test_refused_outside_the_window_with_another_body_or_secret(self) -> None:
        self.assertFalse(verify_push_signature(SECRET, HEADER, BODY, now_s=T + 301))
        self.assertFalse(verify_push_signature(SECRET, HEADER, BODY, now_s=T + 3600, tolerance_s=3000))
        self.assertFalse(verify_push_signature(SECRET, HEADER, BODY + b" ", now_s=T))
        self.assertFalse(verify_push_signature(SECRET + "x", HEADER, BODY, now_s=T))

    def test_any_v1_may_match_while_a_secret_rotates(self) -> None:
        other = hmac.new(b"old-secret", f"{T}.".encode() + BODY, hashlib.sha256).hexdigest()
        both = f"t={T},v1={other},v1={HEADER.split('v1=')[1]}"
        self.assertTrue(verify_push_signature(SECRET, both, BODY, now_s=T))
        self.assertTrue(verify_push_signature("old-secret", both, BODY, now_s=T))

    def test_malformed_headers_are_false_not_errors(self) -> None:
        for header in ["", "t=abc,v1=00", f"v1={'0' * 64}", f"t={T}", f"t={T},v1=XYZ", "garbage", f"t={T};v1={'0' * 64}"]:
            with self.subTest(header=header):
                self.assertFalse(verify_push_signature(SECRET, header, BODY, now_s=T))
        self.assertEqual(parse_push_signature(HEADER), (T, [HEADER.split("v1=")[1]]))


# A Standard Webhooks push as the broker signs it (wire/mq9/push-signature.ts pushSignatureHeaders, run with tsx).
WH_SECRET = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
WH_HEADERS = {
    "mq9-mail-address": "task.001", "mq9-msg-id": "7", "mq9-priority": "urgent", "mq9-create-time": "1767225600",
    "mq9-correlation-id": "c-1",
    "Webhook-Id": "msg_IE5czpSmWjZ63oRGoDH0bWnp_N-dqVk061ILlywpgMg", "webhook-timestamp": "1767225600",
    "webhook-signature": "v1,yg7uh9T1Ejs3hmq/vrez9Vok7VH0XCf4Kmpnbo5+QcY=",
}
WH_LEGACY = "t=1767225600,v1=78d7483afc934c5fc184ac2f141f7337c8604f4ad7572c2e54000045ed433643"


class VerifyPushWebhook(unittest.TestCase):
    def test_the_brokers_signature_verifies(self) -> None:
        self.assertTrue(verify_push_webhook(WH_SECRET, WH_HEADERS, BODY, now_s=T + 10))
        # the deprecated header uses the same key: the decoded bytes of a whsec_ secret
        self.assertTrue(verify_push_signature(WH_SECRET, WH_LEGACY, BODY, now_s=T))

    def test_a_changed_mq9_header_body_secret_or_time_is_refused(self) -> None:
        self.assertFalse(verify_push_webhook(WH_SECRET, {**WH_HEADERS, "mq9-msg-id": "8"}, BODY, now_s=T))
        self.assertFalse(verify_push_webhook(WH_SECRET, {**WH_HEADERS, "mq9-reply-to": "evil.inbox"}, BODY, now_s=T))
        self.assertFalse(verify_push_webhook(WH_SECRET, WH_HEADERS, BODY + b" ", now_s=T))
        self.assertFalse(verify_push_webhook("whsec_" + "A" * 43 + "=", WH_HEADERS, BODY, now_s=T))
        self.assertFalse(verify_push_webhook(WH_SECRET, WH_HEADERS, BODY, now_s=T + 301))
        self.assertFalse(verify_push_webhook(WH_SECRET, {}, BODY, now_s=T))

    def test_the_id_is_derived_from_the_mq9_headers(self) -> None:
        self.assertEqual(push_webhook_id({k.lower(): v for k, v in WH_HEADERS.items()}.get), WH_HEADERS["Webhook-Id"])
        self.assertEqual(push_key("not-whsec"), b"not-whsec")
        self.assertEqual(push_key(WH_SECRET), bytes(range(32)))
