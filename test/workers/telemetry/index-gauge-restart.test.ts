/**
 * The mailbox gauge after the tenant's MailboxIndex restarts (docs/mq9.md
 * "Mailbox index", "The gauge": the index reports its rows that no Mailbox
 * holds within TELEMETRY_FLUSH_MS).
 *
 * The index's meter schedules its flush in memory only (MailboxIndex
 * `flushAt`, Meter `touch`); a CREATE's row is committed, its report is not.
 * When the object restarts before that flush — a broker stopped with Ctrl-C
 * or killed within TELEMETRY_FLUSH_MS (10 s by default) of CREATEs, or an
 * eviction — `Meter.resume()` sees no pending counts and no outbox, so
 * nothing is reported: `mortarmq_mq9_mailboxes` misses those mailboxes until
 * the index changes again (the next CREATE, claim or expiry). Seen locally:
 * 8 CREATEs, Ctrl-C, restart: 87 listed, gauge 79 for as long as the tenant
 * was idle.
 * (Found by the attack-lazy tester.)
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../../objects/env";
import { mailboxIndexStub } from "../../../objects/mailbox-index/stub";
import { series } from "../../../objects/usage/catalog";
import { usageStub } from "../../../objects/usage/stub";
import { handleMq9Request } from "../../../objects/mq9/dispatch";

const testEnv = env as unknown as Env;
const MAILBOXES = series("mortarmq_mq9_mailboxes");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const enc = new TextEncoder();

async function mq9(tenant: string, subject: string, body: unknown = "") {
  const payload = enc.encode(typeof body === "string" ? body : JSON.stringify(body));
  return (await handleMq9Request(testEnv, tenant, { subject, headers: new Map(), payload })).body;
}

describe("mailbox gauge across a restart of the index", () => {
  it("CREATEs whose report was not flushed before the index restarted are still counted after it", async () => {
    const tenant = `gauge-restart-${Math.random().toString(36).slice(2, 8)}`;
    for (const name of ["gr.a", "gr.b", "gr.c"]) expect((await mq9(tenant, "$mq9.AI.MAILBOX.CREATE", { name, ttl: 0 })).error).toBe("");
    // the index restarts before its flush (TELEMETRY_FLUSH_MS = 100 here): the rows are committed, the report is not sent
    await runInDurableObject(mailboxIndexStub(testEnv, tenant), (_o, state) => state.abort("evicted by the test")).catch(() => {});
    expect(await mailboxIndexStub(testEnv, tenant).count()).toBe(3); // the rows survived; the object runs again

    // reported within a few flush intervals; an abort that hit the alarm handler mid-flush makes workerd retry that
    // alarm after a back-off, so allow up to 6 s (without the fix: 0 for good, until the index changes again)
    let gauge = 0;
    for (let i = 0; i < 60 && gauge !== 3; i++) {
      await sleep(100);
      gauge = await usageStub(testEnv, tenant).seriesValue(MAILBOXES);
    }
    expect(gauge).toBe(3);
  });
});
