/**
 * Cost attribution per tenant (issue #26 §3, objects/usage/cost.ts,
 * cost-report.ts, docs/tenants.md "What a tenant costs"): the SQLite rows a
 * tenant's objects write and read and the requests they receive reach its
 * aggregator with the telemetry reports — and only its own; so do the
 * Worker requests made for it.
 */
import { env, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../../objects/env";
import { series } from "../../../objects/usage/catalog";
import { hourOf } from "../../../objects/usage/report";
import { usageStub } from "../../../objects/usage/stub";
import { handleMq9Request } from "../../../objects/mq9/dispatch";
import { registryStub } from "../../../objects/registry/stub";
import { groupStub } from "../../../objects/group/stub";
import { tenantStub } from "../../../objects/tenants/stub";
import { COST_REPORT_MIN_UNITS } from "../../../objects/usage/cost-report";
import type { AggState } from "../../../objects/usage/aggregate-state";

const testEnv = env as unknown as Env;
const ROWS_WRITTEN = series("mortarmq_tenant_rows_written_total");
const ROWS_READ = series("mortarmq_tenant_rows_read_total");
const RPC = series("mortarmq_tenant_do_requests_total", { kind: "rpc" });
const SENT = series("mortarmq_mq9_messages_sent_total");
const WORKER_REQUESTS = series("mortarmq_tenant_worker_requests_total");
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

/** The reporter ids the tenant's aggregator has applied reports from lately (`<kind>:<uuid>` for the memory meters). */
async function reportersOf(tenant: string): Promise<string[]> {
  return runInDurableObject(usageStub(testEnv, tenant), (_o, state) => {
    for (const r of state.storage.sql.exec<{ v: string }>("SELECT v FROM agg_state WHERE id = 1")) return Object.keys((JSON.parse(r.v) as AggState).reporters);
    return [];
  });
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

  it("consumer-group, topic-registry and agent-registry traffic raises its tenant's rows and requests, reported by those objects, and another tenant's not at all", async () => {
    const a = freshTenant("cost-g");
    const b = freshTenant("cost-h");
    // b only has some traffic of its own (a mailbox), to compare with
    expect(await mq9(b, "$mq9.AI.MAILBOX.CREATE", { name: "box.other", ttl: 3600 })).toMatchObject({ error: "" });
    const b0 = await settled(b);
    const bReporters = await reportersOf(b); // its own CREATE asked its TenantDirectory: that one reports to b
    const a0 = await seriesOf(a);

    // TopicRegistry: DECLARE; ConsumerGroup: join, then HEARTBEATs, CONTROL_ACKs and describes; a member of a session that does not exist
    const d = await registryStub(testEnv, a).declare("orders", 2);
    if (!d.ok) throw new Error(d.message);
    const group = groupStub(testEnv, a, d.topic.incarnation, d.topicId, "billing");
    const joined = await group.join({ session: { sessionId: testEnv.SESSION.newUniqueId().toString(), subscriptionId: 1 }, partitionCount: 2, startPolicy: 0 });
    if (!("memberId" in joined)) throw new Error(joined.message);
    const N = 10;
    for (let i = 0; i < N; i++) {
      await group.heartbeat(joined.memberId, joined.membershipEpoch, joined.assignmentEpoch, false);
      await group.controlAck({ memberId: joined.memberId, noticeId: i + 1, kind: 0, membershipEpoch: joined.membershipEpoch, assignmentEpoch: joined.assignmentEpoch, ownershipEpoch: 0, result: 0 });
      await group.info();
    }
    // AgentRegistry: REGISTER and DISCOVER
    for (let i = 0; i < N; i++) {
      expect(await mq9(a, "$mq9.AI.AGENT.REGISTER", { name: `agent-${i}`, mailbox: `mq9://broker/agent.${i}.inbox`, description: "prices orders" })).toMatchObject({ error: "" });
      expect(await mq9(a, "$mq9.AI.AGENT.DISCOVER", { text: "orders" })).toMatchObject({ error: "" });
    }
    // TenantDirectory: the tenant's quotas and state (what sessions and HTTP requests ask it) — but on this open
    // broker only `default` exists: a directory named for any other id reports nothing (a bogus token names any id)
    for (let i = 0; i < N; i++) await tenantStub(testEnv, a).state();

    // reported at most once per flush interval per object: the counts after the last report go with the next
    // call after the interval, so call each object once more once the interval passed
    const kinds = ["group:", "registry:", "agents:"];
    let reporters: string[] = [];
    for (let i = 0; i < 50 && !kinds.every((k) => reporters.some((r) => r.startsWith(k))); i++) {
      await sleep(200);
      await group.info();
      await registryStub(testEnv, a).find("orders");
      await mq9(a, "$mq9.AI.AGENT.DISCOVER", { text: "orders" });
      await tenantStub(testEnv, a).state();
      reporters = await reportersOf(a);
    }
    for (const k of kinds) expect(reporters.some((r) => r.startsWith(k)), `${k} reported to ${a}`).toBe(true);
    const a1 = await settled(a);
    // at least one request per call above (4 × N to the group and agent registry, the declare and join), rows written by the join, REGISTERs, heartbeats' member rows …
    expect(reporters.filter((r) => r.startsWith("tenants:"))).toEqual([]);
    expect(a1[RPC]! - (a0[RPC] ?? 0)).toBeGreaterThanOrEqual(4 * N + 2);
    expect(a1[ROWS_WRITTEN]! - (a0[ROWS_WRITTEN] ?? 0)).toBeGreaterThanOrEqual(N); // each REGISTER stores its card
    expect(a1[ROWS_READ]! - (a0[ROWS_READ] ?? 0)).toBeGreaterThanOrEqual(N); // each DISCOVER reads the cards
    // nothing of it reached the other tenant
    expect(await seriesOf(b)).toEqual(b0);
    expect(await reportersOf(b)).toEqual(bReporters);
    expect(bReporters.filter((r) => r.startsWith("group:") || r.startsWith("agents:") || r.startsWith("registry:"))).toEqual([]);
  }, 60_000);

  it("an object called now and then holds its cost report until it is worth its request (COST_REPORT_MIN_UNITS), then reports all of it", async () => {
    const a = freshTenant("cost-q");
    const d = await registryStub(testEnv, a).declare("quiet", 1);
    if (!d.ok) throw new Error(d.message);
    // a group nobody joined: its first describe creates its tables (rows enough for a report); later ones are one request each
    const group = groupStub(testEnv, a, d.topic.incarnation, d.topicId, "rare");
    for (let i = 0; i < 50 && !(await reportersOf(a)).some((r) => r.startsWith("group:")); i++) {
      await group.info();
      await sleep(200);
    }
    const before = await settled(a);
    const calls = COST_REPORT_MIN_UNITS - 3; // spaced past the flush interval (100 ms): each would have been a report
    for (let i = 0; i < calls; i++) {
      await sleep(150);
      await group.info();
    }
    expect(await settled(a)).toEqual(before); // below the threshold: held
    for (let i = 0; i < 3; i++) {
      await sleep(150);
      await group.info();
    }
    const after = await settled(a, (x) => x[RPC] !== before[RPC]);
    expect(after[RPC]! - before[RPC]!).toBeGreaterThanOrEqual(COST_REPORT_MIN_UNITS); // the held calls arrived with the report
  }, 60_000);

  it("counts the Worker requests made for a tenant (mq9 over HTTP), and its TenantDirectory's costs", async () => {
    // The open broker: every HTTP caller is tenant "default"; /metrics flushes the isolate's counts first.
    const before = await settled("default");
    const N = 7;
    for (let i = 0; i < N; i++) {
      const r = await SELF.fetch(`http://127.0.0.1/mq9/$mq9.AI.MAILBOX.CREATE`, { method: "POST", body: JSON.stringify({ name: `wr.${i}`, ttl: 60 }) });
      expect(r.status).toBe(200);
      await r.arrayBuffer();
    }
    expect((await SELF.fetch("http://127.0.0.1/metrics")).status).toBe(200);
    const after = await settled("default", (s) => (s[WORKER_REQUESTS] ?? 0) >= (before[WORKER_REQUESTS] ?? 0) + N);
    expect(after[WORKER_REQUESTS]! - (before[WORKER_REQUESTS] ?? 0)).toBe(N);
    // the tenant's TenantDirectory (each CREATE asked it for the mailbox limits) reports its costs to it
    for (let i = 0; i < 50 && !(await reportersOf("default")).some((r) => r.startsWith("tenants:")); i++) {
      await sleep(200);
      await tenantStub(testEnv, "default").state();
    }
    expect((await reportersOf("default")).some((r) => r.startsWith("tenants:"))).toBe(true);
  }, 60_000);
});
