/**
 * A mailbox's byte cap (issue 27 item 5; docs/mq9.md "Defaults and
 * limits"), in the hosted project with MQ9_MAILBOX_MAX_BYTES = 1048576: a
 * SEND that would take a mailbox past the cap is refused with 429
 * `quota_exceeded` and stores nothing; in a pipelined run of SENDs
 * (sendMany) each SEND is admitted or refused on its own; dead-letter copies
 * count too; bytes freed by DELETE make room again.
 */
import { env, SELF } from "cloudflare:test";
import { afterAll, describe, expect, it } from "vitest";
import { parseMq9Headers } from "../../../wire/mq9";
import { mailboxStub } from "../../../objects/mailbox/stub";
import type { Env } from "../../../objects/env";
import { mq9As, sleep, tenantWithToken } from "./helpers";

const CAP = 1_048_576;
const FULL = (address: string, held: number, size: number) =>
  `mailbox ${address} is full: it stores ${held} bytes and may store ${CAP} (MQ9_MAILBOX_MAX_BYTES); ` +
  `this message of ${size} bytes was not stored — DELETE messages or let them expire, then retry`;

/** The msg_ids a QUERY of `address` answers. */
async function ids(token: string, address: string): Promise<number[]> {
  const r = await mq9As(token, `$mq9.AI.MSG.QUERY.${address}`, {});
  return (r.body.messages as { msg_id: number }[]).map((m) => m.msg_id);
}

// the mailboxes report to the counting pipeline after their SENDs; let them finish before teardown
afterAll(() => sleep(1_500));

describe("mailbox byte cap (MQ9_MAILBOX_MAX_BYTES = 1 MiB here)", { timeout: 30_000 }, () => {
  it("a SEND past the cap is 429 quota_exceeded and stores nothing; a smaller one that fits is stored; a DELETE makes room", async () => {
    const { token } = await tenantWithToken("mbytes");
    expect((await mq9As(token, "$mq9.AI.MAILBOX.CREATE", { name: "big.box", ttl: 0 })).body.error).toBe("");
    const first = await mq9As(token, "$mq9.AI.MSG.SEND.big.box", new Uint8Array(600_000));
    expect([first.status, first.body]).toEqual([200, { error: "", msg_id: 0 }]);

    const over = await mq9As(token, "$mq9.AI.MSG.SEND.big.box", new Uint8Array(600_000));
    expect([over.status, over.body]).toEqual([429, { error: FULL("big.box", 600_000, 600_000) }]);
    expect(await ids(token, "big.box")).toEqual([0]);

    // keys and tags count as the storage quota counts them: 448_571 bytes of payload + key "k1" + tags ",t," fill it exactly
    const exact = await sendSized(token, "big.box", CAP - 600_000 - 2 - 3, { "mq9-key": "k1", "mq9-tags": "t" });
    expect(exact).toEqual({ status: 200, body: { error: "", msg_id: 1 } });
    const one = await mq9As(token, "$mq9.AI.MSG.SEND.big.box", new Uint8Array(1));
    expect([one.status, one.body.error]).toEqual([429, FULL("big.box", CAP, 1)]);

    // DELETE frees bytes: seen at the next count (at most once a second), then the SEND is stored
    expect((await mq9As(token, "$mq9.AI.MSG.DELETE.big.box.0", "")).body).toEqual({ error: "", deleted: true });
    let again = await mq9As(token, "$mq9.AI.MSG.SEND.big.box", new Uint8Array(600_000));
    for (let i = 0; i < 30 && again.status === 429; i++) {
      await sleep(100);
      again = await mq9As(token, "$mq9.AI.MSG.SEND.big.box", new Uint8Array(600_000));
    }
    expect([again.status, again.body]).toEqual([200, { error: "", msg_id: 2 }]);
    expect(await ids(token, "big.box")).toEqual([1, 2]);
  });

  it("a pipelined run of SENDs (sendMany) stores those that fit and refuses the rest, each on its own; dead-letter copies count too", async () => {
    const { tenant, token } = await tenantWithToken("mbatch");
    expect((await mq9As(token, "$mq9.AI.MAILBOX.CREATE", { name: "run.box", ttl: 0 })).body.error).toBe("");
    expect((await mq9As(token, "$mq9.AI.MSG.SEND.run.box", new Uint8Array(900 * 1024))).status).toBe(200);
    const box = mailboxStub(env as unknown as Env, tenant, "run.box");
    const none = parseMq9Headers([]);
    const results = await box.sendMany("run.box", [none, none, none, none, none], [40_960, 40_960, 40_960, 40_960, 1].map((n) => new Uint8Array(n)));
    // 900 KiB + 3 × 40 KiB fit in 1 MiB; the 4th does not; the 1-byte 5th still does
    expect(results).toEqual([1, 2, 3, { ok: false, code: "quota_exceeded", error: FULL("run.box", 900 * 1024 + 3 * 40_960, 40_960) }, 4]);
    expect(await ids(token, "run.box")).toEqual([0, 1, 2, 3, 4]);

    const copy = {
      lane: 0 as const, key: null, tags: [], payload: new Uint8Array(10_000), replyTo: null, correlationId: null, ref: "src/push_1/7",
      info: { mail_address: "src", msg_id: 7, push_id: "push_1", group_name: "g", reason: "HTTP 500", attempts: 3, time: 0 },
    };
    const refused = await box.deadLetter("run.box", 0, copy);
    expect(refused).toEqual({ ok: false, code: "quota_exceeded", error: FULL("run.box", 900 * 1024 + 3 * 40_960 + 1, 10_000) });
    expect(await ids(token, "run.box")).toEqual([0, 1, 2, 3, 4]);
  });
});

/** `POST /mq9/$mq9.AI.MSG.SEND.<address>` of `size` zero bytes with `mq9-*` headers. */
async function sendSized(token: string, address: string, size: number, headers: Record<string, string>) {
  const res = await SELF.fetch(`http://broker/mq9/$mq9.AI.MSG.SEND.${address}`, {
    method: "POST", body: new Uint8Array(size), headers: { Authorization: `Bearer ${token}`, ...headers },
  });
  return { status: res.status, body: await res.json() };
}
