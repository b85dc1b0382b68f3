/**
 * Long-poll slots are released when the client goes away: an aborted HTTP
 * request (the Worker sees Request.signal abort, compatibility flag
 * enable_request_signal) and a closed NATS connection free their held
 * FETCHes at once, not at max_wait_ms.
 */
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { MAX_PENDING_FETCHES } from "../../../wire/mq9";
import { handleMq9Request } from "../../../objects/mq9/dispatch";
import { mailboxStub } from "../../../objects/mailbox/stub";
import { until } from "../../fixtures/until";
import { createMailbox } from "../helpers/mq9";
import { openNats, testEnv as env } from "../helpers/nats-ws";

const enc = new TextEncoder();
const LONG = JSON.stringify({ config: { max_wait_ms: 30_000 } });

function fetchReq(address: string, body: string, signal?: AbortSignal) {
  return handleMq9Request(env, "default", { subject: `$mq9.AI.MSG.FETCH.${address}`, headers: new Map(), payload: enc.encode(body) }, { signal });
}

const held = (address: string) => mailboxStub(env, "default", address).heldFetches();


describe("held FETCHes of departed clients", () => {
  it("an HTTP client that disconnects releases its held FETCH (POST /mq9, Request.signal)", async () => {
    const a = await createMailbox();
    // a Worker invocation keeps at most 6 subrequests open, so a handful of clients here
    const controllers = Array.from({ length: 4 }, () => new AbortController());
    const pending = controllers.map((c) =>
      SELF.fetch(`http://broker/mq9/$mq9.AI.MSG.FETCH.${a}`, { method: "POST", body: LONG, signal: c.signal }).then(
        (res) => res.status,
        (e: Error) => e.name,
      ),
    );
    await until(async () => (await held(a)) === controllers.length);
    for (const c of controllers) c.abort();
    expect(await Promise.all(pending)).toEqual(controllers.map(() => "AbortError"));
    await until(async () => (await held(a)) === 0); // released now, not after 30 s
  });

  it("1000 held FETCHes → 429; their signals abort → slots free at once, the held calls answer empty", { timeout: 30_000 }, async () => {
    const a = await createMailbox();
    const controllers = Array.from({ length: MAX_PENDING_FETCHES }, () => new AbortController());
    const pending = controllers.map((c) => fetchReq(a, LONG, c.signal));
    await until(async () => (await held(a)) === MAX_PENDING_FETCHES);
    expect((await fetchReq(a, LONG)).body.error).toBe(`mailbox ${a} already holds 1000 waiting FETCH requests`);
    const t0 = Date.now();
    for (const c of controllers) c.abort();
    const answered = await Promise.all(pending); // at once, not after 30 s
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(answered.every((r) => r.status === 200 && (r.body.messages as unknown[]).length === 0)).toBe(true);
    expect(await held(a)).toBe(0);
    expect((await fetchReq(a, JSON.stringify({ config: { max_wait_ms: 50 } }))).status).toBe(200);
  });

  it("a request whose signal is already aborted does not wait", async () => {
    const a = await createMailbox();
    const c = new AbortController();
    c.abort();
    const t0 = Date.now();
    expect((await fetchReq(a, LONG, c.signal)).body).toEqual({ error: "", messages: [] });
    expect(Date.now() - t0).toBeLessThan(5_000);
  });

  it("a closed NATS connection releases the FETCHes it held", { timeout: 30_000 }, async () => {
    const a = await createMailbox();
    const n = 200;
    const c = await openNats();
    await c.waitFor(/^INFO .*\r\n/);
    let ops = 'CONNECT {"verbose":false,"pedantic":false,"headers":true,"protocol":1}\r\nSUB _INBOX.r.* 1\r\n';
    for (let i = 0; i < n; i++) ops += `PUB $mq9.AI.MSG.FETCH.${a} _INBOX.r.${i} ${enc.encode(LONG).length}\r\n${LONG}\r\n`;
    c.send(ops);
    await until(async () => (await held(a)) === n);
    c.ws.close(1000, "bye");
    await until(async () => (await held(a)) === 0); // freed without waiting 30 s
  });
});
