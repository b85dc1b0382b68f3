/**
 * The endpoint rules (docs/push.md "Endpoint rules") apply to every
 * attempt, not only to CREATE: a subscription created under a looser
 * policy (here PUSH_ALLOW_LOOPBACK=1) does not reach a host the broker's
 * current vars refuse (restarted with PUSH_ALLOW_LOOPBACK=0) — its
 * attempts fail with the rule named, and the message is dead-lettered,
 * not sent.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startLocalBroker } from "../../client/local/broker";
import { PushReceiver } from "../fixtures/push-receiver";
import { until } from "../fixtures/until";

const stateDir = mkdtempSync(join(tmpdir(), "mortarmq-push-policy-"));
afterAll(() => rmSync(stateDir, { recursive: true, force: true }));

const mq9 = (url: string, subject: string, body: unknown) =>
  fetch(`${url}/mq9/${subject}`, { method: "POST", body: typeof body === "string" ? body : JSON.stringify(body) })
    .then((r) => r.json() as Promise<Record<string, any>>);

describe("push endpoint rules after a policy change", () => {
  it("a loopback subscription stored while loopback was allowed sends nothing once PUSH_ALLOW_LOOPBACK is off", async () => {
    const receiver = await new PushReceiver().start();
    const fast = { PUSH_BACKOFF_BASE_MS: "100", PUSH_BACKOFF_MAX_MS: "200" };
    try {
      const open = await startLocalBroker({ port: 0, stateDir, vars: { ...fast, PUSH_ALLOW_LOOPBACK: "1" } });
      try {
        expect(await mq9(open.url, "$mq9.AI.MAILBOX.CREATE", { name: "policy.box", ttl: 3600 })).toEqual({ error: "", mail_address: "policy.box" });
        const created = await mq9(open.url, "$mq9.AI.PUSH.CREATE.policy.box", { group_name: "g", url: receiver.url(), max_attempts: 2 });
        expect(created.error).toBe("");
      } finally {
        await open.stop();
      }
      const closed = await startLocalBroker({ port: 0, stateDir, vars: { ...fast, PUSH_ALLOW_LOOPBACK: "0" } });
      try {
        expect((await mq9(closed.url, "$mq9.AI.MSG.SEND.policy.box", "must not leave")).error).toBe("");
        await until(async () => (await mq9(closed.url, "$mq9.AI.PUSH.LIST.policy.box", {})).pushes[0].dead_lettered === 1, 15_000, 100);
        const sub = (await mq9(closed.url, "$mq9.AI.PUSH.LIST.policy.box", {})).pushes[0];
        expect(sub).toMatchObject({ delivered: 0, failed: 2, dead_lettered: 1 });
        expect(sub.last_error).toBe(`connection failed: push url "${receiver.url()}" refused: loopback addresses are not reachable from a deployed broker (PUSH_ALLOW_LOOPBACK is not set)`);
        expect(receiver.requests).toEqual([]);
      } finally {
        await closed.stop();
      }
    } finally {
      await receiver.close();
    }
  }, 120_000);
});
