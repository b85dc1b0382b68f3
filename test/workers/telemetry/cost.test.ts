/**
 * Cost attribution per tenant (issue #26 §3, objects/usage/cost.ts,
 * docs/tenants.md "What a tenant costs"): the SQLite rows a tenant's objects
 * write and read and the requests they receive reach its aggregator with the
 * telemetry reports — and only its own.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../../objects/env";
import { series } from "../../../objects/usage/catalog";
import { hourOf } from "../../../objects/usage/report";
import { usageStub } from "../../../objects/usage/stub";
import { handleMq9Request } from "../../../objects/mq9/dispatch";

const testEnv = env as unknown as Env;
const ROWS_WRITTEN = series("mortarmq_tenant_rows_written_total");
const ROWS_READ = series("mortarmq_tenant_rows_read_total");
const RPC = series("mortarmq_tenant_do_requests_total", { kind: "rpc" });
const SENT = series("mortarmq_mq9_messages_sent_total");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const enc = new TextEncoder();
const freshTenant = (p: string) => `${p}-${Math.random().toString(36).slice(2, 8)}`;

async function mq9(tenant: string, subject: string, body: unknown = "") {
  const payload = enc.encode(typeof body === "string" ? body : JSON.stringify(body));
  return (await handleMq9Request(testEnv, tenant, { subject, headers: new Map(), payload })).body;
}

async function seriesOf(tenant: string): Promise<Record<string, number>> {
  return Object.fromEntries((await usageStub(testEnv, tenant).metrics()) as [string, number][]);
}

/** The tenant's series once its objects' reports stopped changing them for 3 reads in a row (TELEMETRY_FLUSH_MS is 100 ms here). */
async function settled(tenant: string, ok: (s: Record<string, number>) => boolean = () => true): Promise<Record<string, number>> {
  let last = JSON.stringify(await seriesOf(tenant));
  let same = 0;
  for (let i = 0; i < 150; i++) {
    await sleep(400);
    const now = await seriesOf(tenant);
    same = JSON.stringify(now) === last && ok(now) ? same + 1 : 0;
    if (same >= 3) return now;
    last = JSON.stringify(now);
  }
  throw new Error(`${tenant}: series never settled: ${last}`);
}

describe("cost attribution per tenant", () => {
  it("N SENDs raise their tenant's rows written, rows read and object requests by at least N, and another tenant's not at all", async () => {
    const a = freshTenant("cost-a");
    const b = freshTenant("cost-b");
    for (const t of [a, b]) {
      expect(await mq9(t, "$mq9.AI.MAILBOX.CREATE", { name: "box.cost", ttl: 3600 })).toMatchObject({ error: "" });
      expect(await mq9(t, "$mq9.AI.MSG.SEND.box.cost", "first")).toMatchObject({ error: "" });
    }
    const a0 = await settled(a, (s) => s[SENT] === 1);
    const b0 = await settled(b, (s) => s[SENT] === 1);
    expect(a0[ROWS_WRITTEN]).toBeGreaterThan(0);
    expect(b0[ROWS_WRITTEN]).toBeGreaterThan(0);

    const N = 20;
    for (let i = 0; i < N; i++) expect(await mq9(a, "$mq9.AI.MSG.SEND.box.cost", `m${i}`)).toMatchObject({ error: "" });
    expect(await mq9(a, "$mq9.AI.MSG.FETCH.box.cost", { group_name: "g", deliver: "earliest", config: { num_msgs: 100 } })).toMatchObject({ error: "" });
    const a1 = await settled(a, (s) => s[SENT] === N + 1);
    expect(a1[ROWS_WRITTEN]! - a0[ROWS_WRITTEN]!).toBeGreaterThanOrEqual(N); // each SEND is its own commit: at least its message
    expect(a1[RPC]! - a0[RPC]!).toBeGreaterThanOrEqual(N + 1); // one call into the Mailbox per request
    expect(a1[ROWS_READ]! - (a0[ROWS_READ] ?? 0)).toBeGreaterThanOrEqual(N); // the FETCH read the messages
    expect(await seriesOf(b)).toEqual(b0);

    // the same counts per hour (admin usage, the console's Usage page)
    const h = hourOf(Date.now());
    const hours = await usageStub(testEnv, a).usage(h - 3_600_000, h + 3_600_000); // the test may straddle an hour
    const sum = (f: "rows_written" | "rows_read" | "do_requests") => hours.reduce((n, u) => n + u[f], 0);
    expect(sum("rows_written")).toBe(a1[ROWS_WRITTEN]);
    expect(sum("rows_read")).toBe(a1[ROWS_READ]);
    expect(sum("do_requests")).toBeGreaterThanOrEqual(a1[RPC]!);
  }, 60_000); // waits for several quiet flush intervals per tenant
});
