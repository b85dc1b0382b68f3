"""verify_push_signature() on fixed vectors (the TypeScript client's scheme, docs/push.md)."""

import hashlib
import hmac
import unittest

from mortarmq_mq9 import parse_push_signature, verify_push_signature

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
