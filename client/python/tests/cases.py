"""Runner of the shared mq9 case table (test/fixtures/mq9-cases.json) for the
Python client — the twin of test/fixtures/mq9-cases.ts. Each step becomes one
client call; its result is written in the table's neutral form."""

from __future__ import annotations

import base64
import json
import re
import threading
from pathlib import Path
from typing import Any, Callable

from mortarmq_mq9 import Message, Mq9Client, Mq9Error

TABLE = Path(__file__).resolve().parents[3] / "test/fixtures/mq9-cases.json"


def load_table() -> dict[str, Any]:
    """The table."""
    return json.loads(TABLE.read_text("utf-8"))


def message_form(m: Message) -> dict[str, Any]:
    """A message in the table's form."""
    return {"msg_id": m.msg_id, "priority": m.priority, "text": m.payload.decode("utf-8", "replace"), "key": m.key,
            "tags": m.tags, "reply_to": m.reply_to, "correlation_id": m.correlation_id}


def _fill(v: Any, vars: dict[str, str]) -> Any:
    if isinstance(v, str):
        return re.sub(r"\{(p|push_id)\}", lambda m: vars.get(m.group(1), m.group(0)), v)
    if isinstance(v, list):
        return [_fill(x, vars) for x in v]
    if isinstance(v, dict):
        return {k: _fill(x, vars) for k, x in v.items()}
    return v


def _unfill(v: Any, vars: dict[str, str]) -> Any:
    if isinstance(v, str):
        if re.fullmatch(r"mq9\.[0-9a-f]{40}", v):
            return "{generated}"
        if vars.get("push_id") and v == vars["push_id"]:
            return "{push_id}"
        return v.replace(vars["p"], "{p}")
    if isinstance(v, list):
        return [_unfill(x, vars) for x in v]
    if isinstance(v, dict):
        return {k: _unfill(x, vars) for k, x in v.items()}
    return v


def _run_step(mq: Mq9Client, op: str, a: dict[str, Any], vars: dict[str, str]) -> Any:
    if op == "create":
        return {"mail_address": mq.create_mailbox(name=a.get("name"), ttl=a.get("ttl")).mail_address}
    if op == "send":
        payload = base64.b64decode(a["payload_b64"]) if "payload_b64" in a else a["payload"]
        r = mq.send(a["address"], payload, key=a.get("key"), delay=a.get("delay"), ttl=a.get("ttl"), tags=a.get("tags"),
                    priority=a.get("priority"), reply_to=a.get("reply_to"), correlation_id=a.get("correlation_id"))
        return {"msg_id": r.msg_id}
    if op == "fetch":
        r = mq.fetch(a["address"], group=a.get("group"), deliver=a.get("deliver"), from_id=a.get("from_id"),
                     num_msgs=a.get("num_msgs"), max_wait_ms=a.get("max_wait_ms"))
        return {"messages": [message_form(m) for m in r]}
    if op == "ack":
        mq.ack(a["address"], a["group"], a["msg_id"])
        return {}
    if op == "query":
        r = mq.query(a["address"], key=a.get("key"), limit=a.get("limit"), tags=a.get("tags"), correlation_id=a.get("correlation_id"))
        return {"messages": [message_form(m) for m in r]}
    if op == "delete":
        mq.delete(a["address"], a["msg_id"])
        return {}
    if op == "reply_without_reply_to":
        sent = mq.send(a["address"], a["payload"])
        [m] = mq.fetch(a["address"], from_id=sent.msg_id, num_msgs=1, max_wait_ms=0)
        m.reply("an answer")
        return {}
    if op == "request_echo":
        server = Mq9Client(mq.url, token=mq._token)
        stop = threading.Event()

        def serve() -> None:
            for m in server.consume(a["address"], group="echo", deliver="earliest", max_wait_ms=1000):
                m.reply(f"echo: {m.text()}")
                m.ack()
                if stop.is_set():
                    return

        t = threading.Thread(target=serve, daemon=True)
        t.start()
        try:
            answer = mq.request(a["address"], a["payload"], timeout_s=20)
        finally:
            stop.set()
            server.close()
        t.join(15)
        return {"answer": answer.text(), "correlation_id_hex32": bool(re.fullmatch(r"[0-9a-f]{32}", answer.correlation_id or ""))}
    if op == "agent_register":
        mq.agents.register(a["card"])
        return {}
    if op == "agent_report":
        mq.agents.report(a["report"])
        return {}
    if op == "agent_unregister":
        return {"removed": mq.agents.unregister(name=a.get("name"), mailbox=a.get("mailbox"))}
    if op == "agent_discover":
        cards = mq.agents.discover(text=a.get("text"), semantic=a.get("semantic"), limit=a.get("limit"))
        return {"agents": [{"name": c.get("name"), "mailbox": c.get("mailbox"), "report": (c.get("_mq9") or {}).get("report")} for c in cards]}
    if op == "push_create":
        r = mq.create_push(a["address"], group=a["group"], url=a["url"], secret=a.get("secret"), max_attempts=a.get("max_attempts"))
        vars["push_id"] = r.push_id
        return {"push_id": r.push_id, "secret_returned": r.secret is not None}
    if op == "push_list":
        return {"pushes": [{"push_id": p.push_id, "group_name": p.group_name, "url": p.url, "max_attempts": p.max_attempts,
                            "concurrency": p.concurrency, "timeout_ms": p.timeout_ms} for p in mq.list_pushes(a["address"])]}
    if op == "push_delete":
        mq.delete_push(a["address"], a["push_id"])
        return {}
    raise ValueError(f"unknown op {op}")


def run_table(table: dict[str, Any], clients: Callable[[str], Mq9Client], prefix: str) -> dict[str, list[Any]]:
    """Runs every case; returns each step's result in the table's form, per case."""
    out: dict[str, list[Any]] = {}
    for case in table["cases"]:
        vars = {"p": prefix}
        results = []
        for step in case["steps"]:
            args = _fill(step["args"], vars)
            try:
                result = _run_step(clients(step.get("client", "default")), step["op"], args, vars)
            except Mq9Error as e:
                result = {"error": {"kind": e.kind, "retryable": e.retryable, "source": e.source, "message": e.message}}
            results.append(_unfill(result, vars))
        out[case["name"]] = results
    return out


def project_onto(actual: Any, expected: Any) -> Any:
    """``actual`` cut down to the error fields ``expected`` names (everything else whole)."""
    if isinstance(actual, dict) and isinstance(expected, dict) and "error" in actual and "error" in expected:
        return {"error": {k: actual["error"].get(k) for k in expected["error"]}}
    return actual
