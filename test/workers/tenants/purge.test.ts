/**
 * Deleting a tenant purges its data (docs/tenants.md "Deleting a tenant"):
 * topics (partitions, `.dlq` twins, partitions of topics deleted earlier),
 * consumer groups, mailboxes, agents and usage — in bounded steps of the
 * tenant object's alarm, with progress in `GET /admin/tenants/:id` — down to
 * zero rows; a tenant re-created with the same id starts empty; a purge cut
 * off by a crash of the tenant object resumes and finishes.
 * (Project workers-tenants: TENANT_PURGE_DELAY_MS 300 ms.)
 */
import { SELF, env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../../objects/env";
import { NackReason, Op, utf8Bytes } from "../../../wire/mortar";
import { registryStub } from "../../../objects/registry/stub";
import { partitionStub } from "../../../objects/partition/stub";
import { groupStub } from "../../../objects/group/stub";
import { tenantStub } from "../../../objects/tenants/stub";
import { mailboxIndexStub } from "../../../objects/mailbox-index/stub";
import { agentRegistryStub } from "../../../objects/agents/stub";
import { freshMailboxTarget } from "../../../objects/mq9/stubs";
import { usageIndexStub, usageStub } from "../../../objects/usage/stub";
import { series } from "../../../objects/usage/catalog";
import type { LookupResult, TopicInfo } from "../../../objects/registry/rpc";
import type { PurgeDoc, TenantDoc } from "../../../wire/admin/tenants";
import { expectOk } from "../helpers/mortar-ws";
import { Peer, closeAndSettle, isAssign, isMsg } from "../helpers/peer";
import { emptyOrFresh, nonEmpty, rowsOf } from "../helpers/rows";
import { admin, mq9As, sleep, tenantWithToken } from "./helpers";

const testEnv = env as unknown as Env;
const STORED = [series("mortarmq_stored_bytes", { system: "mortar" }), series("mortarmq_stored_bytes", { system: "mq9" })];

async function topicOf(peer: Peer, tenant: string, name: string, partitions: number): Promise<TopicInfo> {
  const d = await peer.c.declare(name, partitions);
  const r = (await registryStub(testEnv, tenant).lookup(d.topicId)) as LookupResult;
  if (!r.ok) throw new Error("lookup failed");
  return r.topic;
}

/** The tenant document (with the purge's progress). */
async function describeTenant(tenant: string): Promise<TenantDoc> {
  const r = await admin("GET", `/admin/tenants/${tenant}`);
  expect(r.status).toBe(200);
  return r.json as TenantDoc;
}

/** Waits until the purge is done; returns every progress document seen on the way. */
async function purged(tenant: string, timeoutMs = 30_000): Promise<PurgeDoc[]> {
  const seen: PurgeDoc[] = [];
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const p = (await describeTenant(tenant)).purge!;
    seen.push(p);
    if (p.state === "done") return seen;
    if (Date.now() > deadline) throw new Error(`purge not done: ${JSON.stringify(p)}`);
    await sleep(50);
  }
}

/** Stored bytes of the tenant as its aggregator has them (both systems). */
async function storedBytes(tenant: string): Promise<number> {
  const u = usageStub(testEnv, tenant);
  return (await u.seriesValue(STORED[0]!)) + (await u.seriesValue(STORED[1]!));
}

describe("tenant purge", () => {
  it("purges topics, twins, deleted topics' partitions, groups, mailboxes, agents and usage to zero rows; the id then starts empty", async () => {
    const { tenant, token } = await tenantWithToken("purge");
    // MortarMQ: a topic with a consumer group that acks and dead-letters (the twin gets data) …
    const a = await Peer.open(token);
    const orders = await topicOf(a, tenant, "orders", 2);
    await a.subscribe(orders.topicId, "billing");
    await a.confirm(await a.take(isAssign, 2));
    for (const v of ["a", "b", "c"]) expectOk(await a.publish(orders.topicId, 0, v), Op.PUB);
    expectOk(await a.publish(orders.topicId, 1, "d"), Op.PUB);
    const msgs = await a.take(isMsg, 4);
    expectOk(await a.request(a.ackFrame(msgs[0]!)), Op.ACK);
    expectOk(await a.request(a.nackFrame(msgs[1]!, NackReason.REJECT)), Op.NACK);
    // … and a topic deleted before the tenant (its partitions keep a marker row).
    const old = await topicOf(a, tenant, "old", 1);
    expectOk(await a.publish(old.topicId, 0, "gone"), Op.PUB);
    a.send([{ op: Op.DECLARE, topic: utf8Bytes("old"), partitionCount: 0, flags: 1 }]);
    expectOk((await a.answer(1))[0], Op.DECLARE);
    await closeAndSettle(groupStub(testEnv, tenant, orders.incarnation, orders.topicId, "billing"), [a]);
    // mq9: mailboxes with messages, an agent.
    for (const box of ["box.one", "box.two"]) {
      expect((await mq9As(token, "$mq9.AI.MAILBOX.CREATE", { name: box })).body.error).toBe("");
      expect((await mq9As(token, `$mq9.AI.MSG.SEND.${box}`, `hello ${box}`)).body.error).toBe("");
    }
    expect((await mq9As(token, "$mq9.AI.AGENT.REGISTER", { name: "alpha", description: "purge me", mailbox: "box.one" })).body.error).toBe("");
    // A push subscription of box.one, retrying (the endpoint does not answer here) when the purge comes.
    const push = await mq9As(token, "$mq9.AI.PUSH.CREATE.box.one", { group_name: "hook", url: "https://hooks.example.com/purge", deliver: "earliest" });
    expect(push.body.error).toBe("");
    expect((await mq9As(token, "$mq9.AI.PUSH.LIST.box.one", {})).body.pushes).toHaveLength(1);
    // The counting pipeline has the stored bytes; the index lists the mailboxes; the twin holds the dead letter.
    for (let i = 0; i < 60 && (await storedBytes(tenant)) === 0; i++) await sleep(100);
    expect(await storedBytes(tenant)).toBeGreaterThan(0);
    // the push's dead-letter mailbox exists from its PUSH.CREATE on (docs/push.md "Dead letters")
    expect((await mailboxIndexStub(testEnv, tenant).page(null, 10)).mailboxes.map((m) => m.address)).toEqual(["box.one", "box.one.dlq", "box.two"]);
    for (let i = 0; i < 50 && (await partitionStub(testEnv, tenant, orders.incarnation, orders.topicId + 1, 0).stats()).highWatermark === 0; i++) await sleep(50);
    expect((await partitionStub(testEnv, tenant, orders.incarnation, orders.topicId + 1, 0).stats()).highWatermark).toBe(1);
    expect(await usageIndexStub(testEnv).tenants()).toContain(tenant);

    const del = await admin("DELETE", `/admin/tenants/${tenant}`);
    expect(del.status).toBe(200);
    expect(del.json.purge).toMatchObject({ state: "waiting", phase: "waiting", purged: { groups: 0, partitions: 0, mailboxes: 0 } });
    const again = await admin("POST", "/admin/tenants", { id: tenant });
    expect([again.status, again.json.error]).toEqual([409, expect.stringMatching(/still being purged \(waiting\)/)]);

    const seen = await purged(tenant);
    const final = seen[seen.length - 1]!;
    expect(final).toMatchObject({ state: "done", phase: "done", last_error: null, next_step_at: null });
    // orders and its twin (2 + 2), and the one partition of "old" that stored data (its twin never started)
    expect(final.purged).toEqual({ groups: 1, partitions: 2 + 2 + 1, mailboxes: 3 }); // box.one, its .dlq, box.two
    expect(final.estimated).toEqual({ groups: 1, partitions: 5, mailboxes: 3 });
    expect(Date.parse(final.started_at!) - Date.parse(final.requested_at)).toBeGreaterThanOrEqual(300);
    expect(seen.some((p) => p.state === "waiting")).toBe(true);

    // Zero rows everywhere the tenant had data.
    const parts = [[orders, 0], [orders, 1], [{ ...orders, topicId: orders.topicId + 1 }, 0], [{ ...orders, topicId: orders.topicId + 1 }, 1], [old, 0], [{ ...old, topicId: old.topicId + 1 }, 0]] as const;
    for (const [t, p] of parts) expect([t.topicId, p, await emptyOrFresh(partitionStub(testEnv, tenant, t.incarnation, t.topicId, p))]).toEqual([t.topicId, p, true]);
    expect(await emptyOrFresh(groupStub(testEnv, tenant, orders.incarnation, orders.topicId, "billing"))).toBe(true);
    for (const box of ["box.one", "box.one.dlq", "box.two"]) expect([box, await emptyOrFresh(freshMailboxTarget(testEnv, tenant, box).stub)]).toEqual([box, true]);
    expect(nonEmpty(await rowsOf(agentRegistryStub(testEnv, tenant)))).toEqual({});
    expect(nonEmpty(await rowsOf(mailboxIndexStub(testEnv, tenant)))).toEqual({});
    // The usage object keeps one row: the time from which it accepts counts again.
    expect(nonEmpty(await rowsOf(usageStub(testEnv, tenant)))).toEqual({ agg_meta: 1 });
    // The registry keeps only its incarnation counter (and its name): new topics never reuse a purged object's name.
    // registry_meta: incarnation, written_from and retention_pushed (layout markers of a new registry, no tenant data).
    expect(nonEmpty(await rowsOf(registryStub(testEnv, tenant)))).toEqual({ registry_meta: 3, object_name: 1 });
    expect(await runInDurableObject(registryStub(testEnv, tenant), (_o, state) =>
      state.storage.sql.exec<{ k: string }>("SELECT k FROM registry_meta ORDER BY k").toArray().map((r) => r.k))).toEqual(["incarnation", "retention_pushed", "written_from"]);
    expect(await storedBytes(tenant)).toBe(0);
    expect(await usageIndexStub(testEnv).tenants()).not.toContain(tenant);
    expect((await describeTenant(tenant)).tokens).toEqual([]);
    // Counts of the old tenant that a reporter still held (the Worker isolate's mq9 HTTP requests, a
    // retried last report) are dropped when they arrive after the purge: the usage answer flushes them.
    const late = await usageStub(testEnv, tenant).report({ reporter: "worker:late", no: 1, at: Date.now(), countedUntil: Date.parse(final.started_at!), entries: [[0, series("mortarmq_mq9_requests_total", { verb: "msg_send", outcome: "ok", transport: "http" }), 9]] });
    expect(late).toEqual({ applied: false });
    const usage = await admin("GET", `/admin/tenants/${tenant}/usage`);
    expect(usage.json.totals).toEqual({
      requests: 0, messages_in: 0, messages_out: 0, bytes_in: 0, bytes_out: 0, connection_seconds: 0, rows_written: 0, rows_read: 0, do_requests: 0, worker_requests: 0, storage_bytes: 0,
    });
    expect((await admin("GET", "/metrics")).json).not.toContain(`tenant="${tenant}",`); // nothing re-registered it
    expect(await usageIndexStub(testEnv).tenants()).not.toContain(tenant);

    // The id can be taken again: the new tenant starts empty, the old token means nothing.
    const recreated = await admin("POST", "/admin/tenants", { id: tenant, name: "second life" });
    expect(recreated.status).toBe(201);
    expect(recreated.json).toMatchObject({ id: tenant, deleted_at: null, tokens: [], purge: null });
    expect((await SELF.fetch("http://broker/stats", { headers: { Authorization: `Bearer ${token}` } })).status).toBe(401);
    const fresh = (await admin("POST", `/admin/tenants/${tenant}/tokens`, {})).json.token as string;
    const stats = await admin("GET", "/stats", undefined, fresh);
    expect(stats.json).toMatchObject({ tenant, topics: [], mailboxes: 0, agents: 0 });
    expect((await mq9As(fresh, "$mq9.AI.MSG.QUERY.box.one", {})).body.error).toBe("mailbox box.one does not exist");
    // The same mailbox object serves the new tenant's mailbox of that name: empty, indexed again.
    expect((await mq9As(fresh, "$mq9.AI.MAILBOX.CREATE", { name: "box.one" })).body.error).toBe("");
    expect((await mq9As(fresh, "$mq9.AI.MSG.SEND.box.one", "new life")).body).toEqual({ error: "", msg_id: 0 });
    const q = (await mq9As(fresh, "$mq9.AI.MSG.QUERY.box.one", {})).body.messages as { payload: string }[];
    expect(q.map((m) => atob(m.payload))).toEqual(["new life"]);
    expect((await mq9As(fresh, "$mq9.AI.PUSH.LIST.box.one", {})).body).toEqual({ error: "", pushes: [] }); // the purged subscription is gone
    for (let i = 0; i < 50 && (await mailboxIndexStub(testEnv, tenant).count()) === 0; i++) await sleep(20);
    expect((await mailboxIndexStub(testEnv, tenant).page(null, 10)).mailboxes.map((m) => m.address)).toEqual(["box.one"]);
    expect((await mq9As(fresh, "$mq9.AI.AGENT.DISCOVER", {})).body.agents).toEqual([]);
    const b = await Peer.open(fresh);
    const reborn = await topicOf(b, tenant, "orders", 2);
    expect(reborn.topicId).toBe(orders.topicId);
    expect(reborn.incarnation).toBeGreaterThan(old.incarnation); // never the name of a purged object
    expect((await partitionStub(testEnv, tenant, reborn.incarnation, reborn.topicId, 0).stats()).highWatermark).toBe(0);
    expect((await admin("GET", "/v0/topics/orders/groups", undefined, fresh)).json.groups).toEqual([]);
    b.close();
  }, 60_000);

  it("resumes after the tenant object crashes mid-purge, and a repeated DELETE only reports the progress", async () => {
    const { tenant, token } = await tenantWithToken("crash");
    const a = await Peer.open(token);
    const big = await topicOf(a, tenant, "wide", 40); // 80 partitions with the twin: steps of 32, 8 (source), 32, 8 (twin)
    for (const p of [0, 20, 39]) expectOk(await a.publish(big.topicId, p, `p${p}`), Op.PUB);
    a.close();
    expect((await admin("DELETE", `/admin/tenants/${tenant}`)).status).toBe(200);
    // Wait until the purge is under way, then reset the tenant's object (as a crash would).
    let mid: PurgeDoc | null = null;
    for (let i = 0; i < 400 && !mid; i++) {
      const p = (await describeTenant(tenant)).purge!;
      if (p.state === "running" && p.purged.partitions > 0 && p.purged.partitions < 80) mid = p;
      else if (p.state === "done") throw new Error("the purge finished before the test could interrupt it");
      else await sleep(10);
    }
    expect(mid).not.toBeNull();
    await runInDurableObject(tenantStub(testEnv, tenant), (_o, state) => state.abort("restart")).catch(() => {});
    const repeated = await admin("DELETE", `/admin/tenants/${tenant}`);
    expect(repeated.status).toBe(200);
    expect(repeated.json.purge.purged.partitions).toBeGreaterThanOrEqual(mid!.purged.partitions);
    const seen = await purged(tenant);
    const final = seen[seen.length - 1]!;
    expect(final.purged.partitions).toBeGreaterThanOrEqual(80); // a step cut off by the crash may have run twice
    expect(final.estimated).toMatchObject({ partitions: 80, groups: 0, mailboxes: 0 });
    for (let i = 1; i < seen.length; i++) expect(seen[i]!.purged.partitions).toBeGreaterThanOrEqual(seen[i - 1]!.purged.partitions);
    for (const p of [0, 20, 39]) {
      expect([p, await emptyOrFresh(partitionStub(testEnv, tenant, big.incarnation, big.topicId, p))]).toEqual([p, true]);
      expect([p, await emptyOrFresh(partitionStub(testEnv, tenant, big.incarnation, big.topicId + 1, p))]).toEqual([p, true]);
    }
    expect(nonEmpty(await rowsOf(usageStub(testEnv, tenant)))).toEqual({ agg_meta: 1 });
    expect((await admin("POST", "/admin/tenants", { id: tenant })).status).toBe(201);
  }, 60_000);
});
