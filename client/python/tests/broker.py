"""The broker the tests run against.

``MQ9_TEST_URL`` (and ``MQ9_TEST_TOKEN``) name a running broker — the
repository's e2e wrapper (test/e2e/mq9-packages.test.ts) passes its own.
Without it, the first test starts one: ``node client/bin/mortarmq.js dev``
of this repository (what ``npm start`` runs) on free ports with a fresh
state directory and a token, stopped when the tests end.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
_started: tuple[str, str] | None = None


def broker() -> tuple[str, str | None]:
    """``(url, token)`` of the broker to test against."""
    global _started
    url = os.environ.get("MQ9_TEST_URL")
    if url:
        return url, os.environ.get("MQ9_TEST_TOKEN") or None
    if _started is None:
        _started = _start()
    return _started


def _start() -> tuple[str, str]:
    token = "python-tests-token"
    state = tempfile.mkdtemp(prefix="mortarmq-python-tests-")
    proc = subprocess.Popen(
        ["node", str(REPO / "client/bin/mortarmq.js"), "dev", "--port", "0", "--bridge-port", "0", "--nats-port", "0",
         "--state", state, "--auth-tokens", f"{token}:python", "--allow-loopback-push"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )

    def stop() -> None:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        shutil.rmtree(state, ignore_errors=True)

    atexit.register(stop)
    deadline = time.monotonic() + 180
    log = ""
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        log += line
        m = re.search(r"mortarmq: broker +(http://\S+)", line)
        if m:
            return m.group(1), token
    stop()
    raise RuntimeError(f"the local broker did not start:\n{log}")
