/**
 * Issue #26 §2 (f): an empty long-poll FETCH writes no row in its Mailbox.
 * A consumer long-polling an idle mailbox reaches a rebuilt Mailbox on
 * nearly every poll (the runtime evicts it between polls: it waits on
 * nothing but the hibernatable wait socket); each poll's probe parked its
 * socket and asked for a telemetry flush (the waiting level changed), an
 * alarm write per poll. Counted here through the real runtime: the rows the
 * Mailbox's cost counter (objects/usage/cost.ts, the bill's own count of
 * cursor rowsWritten and setAlarm) saw while serving the poll, on an
 * instance rebuilt for it. A message sent afterwards still wakes the
 * waiting consumer, also when the Mailbox was evicted while it waited.
 */
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { mailboxStub } from "../../../objects/mailbox/stub";
import { costCounterOf, ROWS_WRITTEN } from "../../../objects/usage/cost";
import { until } from "../../fixtures/until";
import { createMailbox, mq9, send, text } from "../helpers/mq9";
import { openNats, testEnv as env, type RawNats } from "../helpers/nats-ws";

const enc = new TextEncoder();

/** Rows the Mailbox's current instance wrote since it started or was last asked (its cost counter, drained). */
async function rowsWritten(address: string): Promise<number> {
  return runInDurableObject(mailboxStub(env, "default", address), (_o, state) => {
    let n = 0;
    costCounterOf(state.storage)?.drain((series, v) => {
      if (series === ROWS_WRITTEN) n += v;
    });
    return n;
  });
}

/** Drops the Mailbox's instance (as the runtime's eviction does); its next request starts a new one. */
async function evict(address: string): Promise<void> {
  await runInDurableObject(mailboxStub(env, "default", address), (_o, state) => state.abort("evicted by the test")).catch(() => {});
}

const held = (address: string) => mailboxStub(env, "default", address).heldFetches();

/** A NATS connection that can send mq9 requests and read their replies. */
async function natsClient(): Promise<RawNats & { request(subject: string, body: unknown, sid: number): void }> {
  const c = await openNats();
  await c.waitFor(/^INFO .*\r\n/);
  c.send('CONNECT {"verbose":false,"pedantic":false,"headers":true,"protocol":1}\r\nSUB _INBOX.r.* 1\r\n');
  return Object.assign(c, {
    request(subject: string, body: unknown, sid: number) {
      const payload = JSON.stringify(body);
      c.send(`PUB ${subject} _INBOX.r.${sid} ${enc.encode(payload).length}\r\n${payload}\r\n`);
    },
  });
}

describe("an empty long-poll FETCH writes no row (issue #26 §2 (f))", () => {
  it("over HTTP: each empty poll on a rebuilt Mailbox writes 0 rows; a SEND after an eviction still wakes the waiting consumer", { timeout: 30_000 }, async () => {
    const a = await createMailbox();
    const poll = { group_name: "g", deliver: "latest", config: { num_msgs: 10, max_wait_ms: 200 } };
    expect((await mq9(`$mq9.AI.MSG.FETCH.${a}`, poll)).body).toEqual({ error: "", messages: [] }); // opens group g: its one row
    for (let i = 0; i < 3; i++) {
      await evict(a);
      expect((await mq9(`$mq9.AI.MSG.FETCH.${a}`, poll)).body).toEqual({ error: "", messages: [] });
      expect(await rowsWritten(a)).toBe(0);
    }
    // a consumer waits on a rebuilt Mailbox, on a socket parked without a row or a waiter in memory; a SEND wakes it
    // (the test cannot evict it while the consumer waits: an aborted object's stubs fail, a hibernated one's do not;
    // test/e2e/idle-eviction.test.ts has the runtime evict a Mailbox with a waiting consumer)
    await evict(a);
    const waiting = mq9(`$mq9.AI.MSG.FETCH.${a}`, { ...poll, config: { num_msgs: 10, max_wait_ms: 20_000 } });
    await until(async () => (await held(a)) === 1);
    expect(await rowsWritten(a)).toBe(0);
    await send(a, "after the eviction");
    const got = await waiting;
    expect(got.body.error).toBe("");
    expect((got.body.messages as { payload: string }[]).map((m) => text(m as never))).toEqual(["after the eviction"]);
  });

  it("over NATS: each empty poll writes 0 rows; a SEND wakes the waiting consumer", { timeout: 30_000 }, async () => {
    const a = await createMailbox();
    await evict(a); // the connection's Mailbox stub is made after this (an aborted object's stubs fail)
    const c = await natsClient();
    const fetchSubject = `$mq9.AI.MSG.FETCH.${a}`;
    const poll = { group_name: "g", deliver: "latest", config: { num_msgs: 10, max_wait_ms: 200 } };
    c.request(fetchSubject, poll, 0);
    await c.waitFor(/MSG _INBOX\.r\.0 1 \d+\r\n\{"error":"","messages":\[\]\}\r\n/);
    await rowsWritten(a); // drain: the first poll opened group g (its one row)
    for (let i = 1; i <= 3; i++) {
      c.request(fetchSubject, poll, i);
      await c.waitFor(new RegExp(`MSG _INBOX\\.r\\.${i} 1 \\d+\\r\\n\\{"error":"","messages":\\[\\]\\}\\r\\n`));
      expect(await rowsWritten(a)).toBe(0);
    }
    c.request(fetchSubject, { ...poll, config: { num_msgs: 10, max_wait_ms: 20_000 } }, 9);
    await until(async () => (await held(a)) === 1);
    expect(await rowsWritten(a)).toBe(0);
    await send(a, "wake over NATS");
    const [, payload] = (await c.waitFor(/MSG _INBOX\.r\.9 1 \d+\r\n(\{.*\})\r\n/)) as unknown as [string, string];
    const reply = JSON.parse(payload) as { error: string; messages: { payload: string }[] };
    expect(reply.error).toBe("");
    expect(reply.messages.map((m) => atob(m.payload))).toEqual(["wake over NATS"]);
    c.ws.close(1000, "bye");
  });
});
