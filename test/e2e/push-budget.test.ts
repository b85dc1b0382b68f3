/**
 * Push within one invocation's limits (issue 27, docs/push.md "Limits and
 * settings"): many queued attempts over several subscriptions with a high
 * `concurrency` never hold more than 6 connections open at once, and with
 * a small per-run subrequest budget (PUSH_SUBREQUESTS_PER_RUN) every
 * message is still delivered — the rest of each run waits for the next.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useLocalBroker } from "../fixtures/e2e-broker";
import { until } from "../fixtures/until";

const BUDGET = 25;
const ctx = useLocalBroker("push-budget", {
  vars: { PUSH_ALLOW_LOOPBACK: "1", PUSH_SUBREQUESTS_PER_RUN: String(BUDGET), PUSH_BACKOFF_BASE_MS: "100", PUSH_BACKOFF_MAX_MS: "400" },
});

/** An endpoint that answers 200 after 20 ms and records the most requests it had open at once. */
let server: Server;
let open = 0;
let maxOpen = 0;
const seen = new Set<string>();
beforeAll(async () => {
  server = createServer((req, res) => {
    open++;
    maxOpen = Math.max(maxOpen, open);
    req.resume();
    req.on("end", () => {
      setTimeout(() => {
        seen.add(`${req.headers["mq9-push-id"]}/${req.headers["mq9-msg-id"]}`);
        open--;
        res.writeHead(200).end();
      }, 20);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
});
afterAll(async () => {
  await new Promise<void>((resolve) => server?.close(() => resolve()));
});

async function mq9(subject: string, payload: unknown = {}): Promise<Record<string, any>> {
  const res = await fetch(`${ctx.broker.url}/mq9/${subject}`, { method: "POST", body: typeof payload === "string" ? payload : JSON.stringify(payload) });
  const body = (await res.json()) as Record<string, any>;
  expect(body.error).toBe("");
  return body;
}

describe("push budget per invocation", () => {
  it("600 queued attempts over 3 subscriptions of concurrency 32: at most 6 open at once, all delivered with a budget of 25 per run", async () => {
    const box = `budget.${Date.now().toString(36)}`;
    await mq9("$mq9.AI.MAILBOX.CREATE", { name: box, ttl: 0 });
    const messages = 200;
    for (let i = 0; i < messages; i += 20) {
      await Promise.all(Array.from({ length: 20 }, (_, j) => mq9(`$mq9.AI.MSG.SEND.${box}`, `m${i + j}`)));
    }
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    const ids: string[] = [];
    for (const g of ["a", "b", "c"]) {
      ids.push((await mq9(`$mq9.AI.PUSH.CREATE.${box}`, { group_name: g, url, deliver: "earliest", concurrency: 32 })).push_id);
    }
    await until(async () => seen.size >= 3 * messages, 120_000);
    for (const id of ids) for (let m = 0; m < messages; m++) expect(seen.has(`${id}/${m}`)).toBe(true);
    expect(maxOpen).toBeGreaterThan(1);
    expect(maxOpen).toBeLessThanOrEqual(6);
  }, 180_000);
});
