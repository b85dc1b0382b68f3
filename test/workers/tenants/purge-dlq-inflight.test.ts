/**
 * A deleted tenant's data never reaches the tenant re-created with its id
 * (docs/tenants.md "Deleting a tenant": "the new tenant starts empty").
 *
 * The purge's `mailboxes` phase opens only the mailboxes its index page
 * marks materialized (objects/tenants/purger.ts); a `.dlq` row PUSH.CREATE
 * wrote is not materialized until its first dead letter. A dead letter
 * whose RPC was already on its way when its source mailbox was purged
 * (Mailbox.purge aborts attempts, not a deadLetter call in flight) lands
 * after that page was read: it claims the row (still in the index until the
 * `mailbox-index` phase) and stores the copy in the `.dlq` Mailbox, which no
 * later phase purges. When the tenant is re-created and `<source>.dlq`
 * created again (a CREATE, or the PUSH.CREATE of the same source), the
 * Mailbox still held the old mailbox (`here()`): the old tenant's dead
 * letter was served to the new one. Now the purge seals the index before
 * its first page (MailboxIndex.seal): the late dead letter claims nothing.
 * (Found by the attack-lazy tester; a race through real clients, here
 * made deterministic by calling the purge steps and the dead letter in
 * that order.)
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../../objects/env";
import { mailboxIndexStub } from "../../../objects/mailbox-index/stub";
import { handleMq9Request } from "../../../objects/mq9/dispatch";
import { mailboxStub } from "../../../objects/mailbox/stub";
import { newPurge, type PurgeState } from "../../../objects/tenants/purge";
import { purgeStep } from "../../../objects/tenants/purger";

const testEnv = env as unknown as Env;
const enc = new TextEncoder();

async function mq9(tenant: string, subject: string, body: unknown = "") {
  const payload = enc.encode(typeof body === "string" ? body : JSON.stringify(body));
  return (await handleMq9Request(testEnv, tenant, { subject, headers: new Map(), payload })).body;
}

/** Runs purge steps until `stop(state)` (or done). */
async function runPurge(tenant: string, s: PurgeState, stop: (s: PurgeState) => boolean): Promise<PurgeState> {
  for (let i = 0; i < 50 && s.phase !== "done" && !stop(s); i++) s = await purgeStep(testEnv, tenant, s, Date.now());
  return s;
}

describe("tenant purge and a dead letter in flight", { timeout: 30_000 }, () => {
  it("a dead letter landing after the mailboxes phase read its page does not survive into the re-created tenant", async () => {
    const tenant = `purge-dlq-${Math.random().toString(36).slice(2, 8)}`;
    expect((await mq9(tenant, "$mq9.AI.MAILBOX.CREATE", { name: "src", ttl: 0 })).error).toBe("");
    // what PUSH.CREATE writes for the dead-letter mailbox: its row only (push.ts createPush)
    expect(await mailboxIndexStub(testEnv, tenant).create("src.dlq", 0)).toMatchObject({ ok: true });

    // the tenant was deleted: the purge runs through its mailboxes phase
    let s = await runPurge(tenant, newPurge(Date.now() - 1, 0), (x) => x.phase === "agents");
    expect(s.phase).toBe("agents");

    // the dead letter src sent before it was purged arrives now
    const copy = {
      lane: 0 as const, key: null, tags: [], payload: enc.encode("old tenant's secret"), replyTo: null, correlationId: null,
      info: { mail_address: "src", msg_id: 0, push_id: "push_000000000000000000000000", group_name: "hook", reason: "HTTP 500", attempts: 1, time: Math.floor(Date.now() / 1000) },
      ref: "src/push_000000000000000000000000/0",
    };
    // the purge sealed the index before it read its first page: the late dead letter opens nothing
    const landed = await mailboxStub(testEnv, tenant, "src.dlq").deadLetter("src.dlq", 0, copy);
    expect(landed).toMatchObject({ ok: false, code: "mailbox_not_found" });
    // nor can a request of a connection authorized before the deletion create a mailbox now
    expect(await mq9(tenant, "$mq9.AI.MAILBOX.CREATE", { name: "late.box" })).toEqual({ error: `unauthorized: tenant ${tenant} was deleted`, mail_address: "" });

    s = await runPurge(tenant, s, () => false);
    expect(s.phase).toBe("done");

    // the tenant is re-created with the same id; its src.dlq is created again
    expect((await mq9(tenant, "$mq9.AI.MAILBOX.CREATE", { name: "src.dlq", ttl: 0 })).error).toBe("");
    const q = await mq9(tenant, "$mq9.AI.MSG.QUERY.src.dlq", {});
    expect(q.error).toBe("");
    expect(q.messages).toEqual([]); // was: the purged tenant's dead letter still there
  });
});
