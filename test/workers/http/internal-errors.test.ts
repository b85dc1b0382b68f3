/**
 * Internal error text never reaches a client (#14 item 3): a failure
 * inside an object — here a real SQLite error, provoked by dropping a table
 * the object uses — is answered with the protocol's generic error and a
 * reference the broker logged the details under; no SQLite message, no
 * stack text, on mq9 over HTTP, mq9 over NATS and MortarMQ.
 */
import { SELF, env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ErrorCode, Op } from "../../../wire/mortar";
import { mailboxStub } from "../../../objects/mailbox/stub";
import { partitionStub } from "../../../objects/partition/stub";
import { registryStub } from "../../../objects/registry/stub";
import { OPEN_TENANT } from "../../../objects/tenants/auth";
import type { LookupResult } from "../../../objects/registry/rpc";
import { createMailbox, freshAddress, mq9 } from "../helpers/mq9";
import { openNats } from "../helpers/nats-ws";
import { WsConn, expectErr, pubFrame, pubResult } from "../helpers/mortar-ws";

/** Anything that would reveal the platform's text. */
const LEAK = /sqlite|no such table|SQLITE_|\bat \S+:\d+|Error:/i;
const GENERIC = /^internal error \(ref [0-9a-f]{8}\); the broker logged the details$/;

/** Drops `table` in the mailbox object of `address` (opened first: a CREATE writes only its index row), so its next write fails inside SQLite. */
async function breakMailbox(address: string, table: string): Promise<void> {
  expect((await mq9(`$mq9.AI.MSG.QUERY.${address}`, {})).body.error).toBe("");
  await runInDurableObject(mailboxStub(env, OPEN_TENANT, address), async (_m, ctx) => {
    ctx.storage.sql.exec(`DROP TABLE ${table}`);
  });
}

describe("internal errors are answered without their text", () => {
  it("mq9 over HTTP: a SEND failing inside its mailbox → 500 with a reference, no SQLite text", async () => {
    const address = await createMailbox(freshAddress("ie"));
    await breakMailbox(address, "segments");
    const r = await mq9(`$mq9.AI.MSG.SEND.${address}`, "hello");
    expect(r.status).toBe(500);
    expect(r.body.error).toMatch(GENERIC);
    expect(r.body.error).not.toMatch(LEAK);
  });

  it("mq9 over NATS: the same request gets the same generic reply", async () => {
    const address = await createMailbox(freshAddress("ie"));
    await breakMailbox(address, "segments");
    const c = await openNats();
    c.send(`CONNECT {"verbose":false,"headers":true}\r\nSUB _INBOX.ie 1\r\nPUB $mq9.AI.MSG.SEND.${address} _INBOX.ie 5\r\nhello\r\nPING\r\n`);
    const [, body] = await c.waitFor(/MSG _INBOX\.ie 1 \d+\r\n(\{.*\})\r\n/);
    const reply = JSON.parse(body!) as { error: string };
    expect(reply.error).toMatch(GENERIC);
    expect(reply.error).not.toMatch(LEAK);
    c.ws.close();
  });

  it("MortarMQ: a PUB whose partition cannot append → STORAGE_UNAVAILABLE without the SQLite text", async () => {
    const c = await WsConn.open();
    await c.connect();
    const { topicId } = await c.declare(`ie-${Math.random().toString(36).slice(2, 8)}`, 1);
    c.send([pubFrame(topicId, 0, "first")]);
    expect(pubResult((await c.take(1))[0]).sequence).toBe(1n);
    const look = (await registryStub(env, OPEN_TENANT).lookup(topicId)) as LookupResult;
    if (!look.ok) throw new Error("lookup");
    await runInDurableObject(partitionStub(env, OPEN_TENANT, look.topic.incarnation, topicId, 0), async (_p, ctx) => {
      ctx.storage.sql.exec("DROP TABLE log");
    });
    c.send([pubFrame(topicId, 0, "second")]);
    const err = expectErr((await c.take(1))[0], ErrorCode.STORAGE_UNAVAILABLE, Op.PUB);
    const text = new TextDecoder().decode(err.message);
    expect(text).toMatch(/^append failed: storage unavailable, nothing was appended \(ref [0-9a-f]{8}\)$/);
    expect(text).not.toMatch(LEAK);
    c.close();
  });
});

// Last in this file: it breaks the open tenant's topic registry for good.
describe("admin and console routes whose object call fails", () => {
  it("answer 503 with Retry-After and a reference, never the SQLite text", async () => {
    const c = await WsConn.open();
    await c.connect();
    const topic = `ie-admin-${Math.random().toString(36).slice(2, 8)}`;
    await c.declare(topic, 1);
    c.close();
    await runInDurableObject(registryStub(env, OPEN_TENANT), async (_r, ctx) => {
      ctx.storage.sql.exec("DROP TABLE topics");
    });
    for (const path of [`/v0/topics/${topic}/groups`, "/v0/topics", `/v0/topics/${topic}`]) {
      const res = await SELF.fetch(`https://broker.test${path}`);
      const body = (await res.json()) as { error: string };
      expect([path, res.status]).toEqual([path, 503]);
      expect(res.headers.get("retry-after")).toBe("1");
      expect(body.error).toMatch(/^the broker's objects did not answer, retry shortly \(ref [0-9a-f]{8}\)$/);
      expect(body.error).not.toMatch(LEAK);
    }
  });
});
