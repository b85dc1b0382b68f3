"""mortarmq-mq9: the mq9 client for Python (standard library only), over HTTP.

    from mortarmq_mq9 import Mq9Client
    mq = Mq9Client("http://127.0.0.1:8787", token=None)
    inbox = mq.create_mailbox(ttl=600).mail_address

See client/python/README.md.
"""

from .client import Agents, Mq9Client
from .requests import encode_payload, mail_address_problem, parse_retry_after, send_headers
from .errors import Mq9Error, Mq9ErrorKind, Mq9ErrorSource, classify_mq9_error
from .models import CreatedMailbox, CreatedPush, DeadLetterInfo, Message, Priority, PushInfo, SentMessage
from .signature import (
    PUSH_SIGNATURE_HEADER, PUSH_SIGNATURE_TOLERANCE_S, parse_push_signature, push_key, push_webhook_id, verify_push_signature,
    verify_push_webhook,
)

__version__ = "0.1.0"

__all__ = [
    "Agents", "CreatedMailbox", "CreatedPush", "DeadLetterInfo", "Message", "Mq9Client", "Mq9Error", "Mq9ErrorKind",
    "Mq9ErrorSource", "PUSH_SIGNATURE_HEADER", "PUSH_SIGNATURE_TOLERANCE_S", "Priority", "PushInfo", "SentMessage",
    "classify_mq9_error", "encode_payload", "mail_address_problem", "parse_push_signature", "parse_retry_after",
    "push_key", "push_webhook_id", "send_headers", "verify_push_signature", "verify_push_webhook",
]
