/**
 * Issue 27 item 1, fan-out: on a tenant with 1,500 partitions (two topics of
 * 750, plus their `.dlq` twins) of which four were written, `/stats` (every
 * page), `/metrics`, the console's topic pages, the group listing and a
 * missing group's GET each stay within 100 object calls (the harness's
 * budgetFetch fails a request over it), and no partition that was never
 * written is called (so none is created).
 */
import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../../objects/env";
import { partitionName } from "../../../objects/shared/names";
import { registryStub } from "../../../objects/registry/stub";
import type { TopicInfo } from "../../../objects/registry/rpc";
import type { TopicDetail, TopicPage } from "../../../wire/admin/console";
import type { StatsDoc } from "../../../worker/admin/stats";
import { budgetFetch, countingEnv, type CallLog } from "../helpers/call-budget";

const e = env as unknown as Env;
const TENANT = "default";
const written: [string, number][] = [["fan-a", 0], ["fan-a", 7], ["fan-a", 749], ["fan-b", 3]];
const partitionCalls = new Set<string>();

function notePartitions(log: CallLog): void {
  for (const n of log.calls.get("PARTITION") ?? []) partitionCalls.add(n);
}

async function setup(): Promise<Map<string, TopicInfo>> {
  const topics = new Map<string, TopicInfo>();
  for (const name of ["fan-a", "fan-b"]) {
    const r = await registryStub(e, TENANT).declare(name, 750);
    expect(r.ok).toBe(true);
    topics.set(name, (await registryStub(e, TENANT).find(name)) as TopicInfo);
  }
  for (const [t, p] of written) {
    const res = await SELF.fetch(`http://broker/v0/topics/${t}/partitions/${p}/records`, { method: "POST", body: JSON.stringify({ value: "v" }) });
    expect(res.status).toBe(201);
  }
  return topics;
}

describe("object calls per request on a tenant with 1,500 partitions", () => {
  it("stays within 100 per request and never calls an unwritten partition", async () => {
    const topics = await setup();
    const allowed = new Set(written.map(([t, p]) => {
      const info = topics.get(t)!;
      return partitionName({ tenant: TENANT, incarnation: info.incarnation, topicId: info.topicId, partition: p });
    }));

    // /stats, one page: every partition shown, only the written ones read.
    const one = await budgetFetch("/stats");
    expect(one.res.status).toBe(200);
    notePartitions(one.log);
    const doc = (await one.res.json()) as StatsDoc;
    expect(doc.next_cursor).toBeNull();
    const a = doc.topics.find((t) => t.name === "fan-a")!;
    expect(a.partitions).toHaveLength(750);
    expect(a.partitions.filter((p) => p.high_watermark === 1).map((p) => p.partition)).toEqual([0, 7, 749]);
    expect(doc.topics.map((t) => t.partitions.length).reduce((x, y) => x + y, 0)).toBe(3000);
    expect(one.log.calls.get("PARTITION")).toHaveLength(4);

    // /stats in pages of one written partition: four pages, together the same document.
    const seen: number[] = [];
    let cursor: string | null = "";
    let pages = 0;
    while (cursor !== null) {
      const r = await budgetFetch(`/stats?limit=1${cursor ? `&cursor=${cursor}` : ""}`);
      notePartitions(r.log);
      const page = (await r.res.json()) as StatsDoc;
      for (const t of page.topics) for (const p of t.partitions) seen.push(p.high_watermark);
      cursor = page.next_cursor;
      pages++;
    }
    expect(pages).toBe(4);
    expect(seen).toHaveLength(3000);
    expect(seen.filter((h) => h === 1)).toHaveLength(4);
    expect((await budgetFetch("/stats?cursor=bogus")).res.status).toBe(400);

    const metrics = await budgetFetch("/metrics");
    expect(metrics.res.status).toBe(200);
    expect(await metrics.res.text()).toContain("mortarmq_build_info");

    const rows: TopicPage["topics"] = [];
    for (let after: string | null = ""; after !== null;) {
      const list = await budgetFetch(`/v0/topics?limit=50${after ? `&after=${encodeURIComponent(after)}` : ""}`);
      notePartitions(list.log);
      const page = (await list.res.json()) as TopicPage;
      rows.push(...page.topics);
      after = page.next;
    }
    expect(rows.filter((r) => r.name.startsWith("fan-")).map((r) => [r.name, r.records])).toEqual([["fan-a", 3], ["fan-a.dlq", 0], ["fan-b", 1], ["fan-b.dlq", 0]]);

    const detail = await budgetFetch("/v0/topics/fan-a");
    notePartitions(detail.log);
    const d = (await detail.res.json()) as TopicDetail;
    expect(d.partitions).toHaveLength(750);
    expect(d.partitions.filter((p) => p.records === 1).map((p) => p.partition)).toEqual([0, 7, 749]);
    expect(d.partial).toBe(false);

    const groups = await budgetFetch("/v0/topics/fan-a/groups");
    notePartitions(groups.log);
    expect(await groups.res.json()).toMatchObject({ groups: [], truncated: false });

    // A missing group: 404, and its ConsumerGroup object is never called (never created).
    const missing = await budgetFetch("/v0/topics/fan-a/groups/nobody");
    notePartitions(missing.log);
    expect(missing.res.status).toBe(404);
    expect(missing.log.calls.get("GROUP") ?? []).toEqual([]);

    expect([...partitionCalls].filter((n) => !allowed.has(n))).toEqual([]);
  });

  it("counts every call made through a wrapped namespace", async () => {
    const { env: counted, log } = countingEnv();
    await registryStub(counted, "counted").topicCount();
    await registryStub(counted, "counted").topicCount();
    expect(log.total).toBe(2);
    expect(log.calls.get("REGISTRY")).toHaveLength(2);
  });
});
