/**
 * The bill bench's pure parts (bench/bill/): Cloudflare's price math, the
 * units a window between two meter snapshots used, object scopes and the
 * census flag, and docs/operations.md "What it costs" kept equal to the
 * recorded runs (bench/results/bill.json, census.json).
 */
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { costSectionOf, renderCostSection, replaceCostSection, BEGIN, END, type BillRecord, type CensusRecord } from "../../bench/bill/doc";
import { PRICES, pricePerMillion, QUEUES_PER_M_MESSAGES, residentDollarsPerHour } from "../../bench/bill/prices";
import { byKind, census, objectScope, requestMix, topWriters, unitRates, windowUnits, type MeterSnapshot, type ObjectMeter } from "../../bench/bill/units";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

function meter(kind: string, id: string, name: string | null, over: Partial<ObjectMeter> = {}): ObjectMeter {
  return {
    kind, id, name, constructs: 1, inflight: 0,
    requests: { rpc: {}, fetch: 0, alarm: 0, wsMessage: 0, wsClose: 0, wsError: 0 },
    rowsRead: 0, rowsWritten: 0, alarmSets: 0, kvRowsRead: 0, kvRowsWritten: 0, subrequests: 0, statements: {}, timers: [],
    ...over,
  };
}
const snap = (at: number, workerRequests: number, objects: ObjectMeter[]): MeterSnapshot => ({ at, startedAt: 0, worker: { requests: workerRequests, subrequests: 0 }, objects });

describe("Cloudflare prices", () => {
  it("puts Queues at $1.20 per million messages (3 operations × $0.40/M)", () => {
    expect(QUEUES_PER_M_MESSAGES).toBeCloseTo(1.2, 10);
  });

  it("prices units per message as $ per million messages, each unit at its own rate", () => {
    // issue #26 (c): 3.1 DO requests, 3 Worker requests, 8.8 rows written, 12 rows read per message
    const p = pricePerMillion({ doRequests: 3.1, workerRequests: 3, rowsWritten: 8.8, rowsRead: 12 });
    expect(p.doRequests).toBeCloseTo(0.465, 10);
    expect(p.workerRequests).toBeCloseTo(0.9, 10);
    expect(p.rowsWritten).toBeCloseTo(8.8, 10);
    expect(p.rowsRead).toBeCloseTo(0.012, 10);
    expect(p.total).toBeCloseTo(10.177, 10);
    expect(p.vsQueues).toBeCloseTo(10.177 / 1.2, 10);
    expect(pricePerMillion({ doRequests: 0, workerRequests: 0, rowsWritten: 0, rowsRead: 0 }).total).toBe(0);
  });

  it("prices an object that cannot hibernate at 128 MB of duration", () => {
    expect(residentDollarsPerHour()).toBeCloseTo((3600 * 0.128 * 12.5) / 1e6, 12);
    expect(residentDollarsPerHour(3)).toBeCloseTo(3 * residentDollarsPerHour(), 12);
    expect(PRICES.wsMessagesPerRequest).toBe(20);
  });
});

describe("units of a window", () => {
  const before = snap(1_000, 10, [
    meter("Partition", "p1", "partition/default/1/7/0", { requests: { rpc: { append: 5 }, fetch: 0, alarm: 0, wsMessage: 0, wsClose: 0, wsError: 0 }, rowsWritten: 50, rowsRead: 9, statements: { "INSERT INTO log": [0, 40], "DELETE FROM d": [0, 10] } }),
    meter("MortarSession", "s1", null, { requests: { rpc: {}, fetch: 1, alarm: 0, wsMessage: 100, wsClose: 0, wsError: 0 } }),
    meter("TopicRegistry", "r1", "registry/default", { requests: { rpc: { lookup: 1 }, fetch: 0, alarm: 0, wsMessage: 0, wsClose: 0, wsError: 0 } }),
  ]);
  const after = snap(61_000, 13, [
    meter("Partition", "p1", "partition/default/1/7/0", {
      requests: { rpc: { append: 9, settle: 2 }, fetch: 0, alarm: 1, wsMessage: 0, wsClose: 0, wsError: 0 },
      rowsWritten: 80, rowsRead: 19, alarmSets: 2, statements: { "INSERT INTO log": [0, 60], "DELETE FROM d": [0, 20] },
    }),
    meter("MortarSession", "s1", null, { requests: { rpc: {}, fetch: 1, alarm: 0, wsMessage: 140, wsClose: 0, wsError: 0 }, constructs: 2 }),
    meter("TopicRegistry", "r1", "registry/default", { requests: { rpc: { lookup: 1 }, fetch: 0, alarm: 0, wsMessage: 0, wsClose: 0, wsError: 0 } }),
    meter("UsageAggregator", "u1", "usage/default", { requests: { rpc: { report: 3 }, fetch: 0, alarm: 0, wsMessage: 0, wsClose: 0, wsError: 0 }, rowsWritten: 12, kvRowsWritten: 1 }),
  ]);
  const w = windowUnits(before, after);

  it("counts each object's requests, rows (setAlarm and KV keys as rows written) and evictions since the first snapshot", () => {
    expect(w.ms).toBe(60_000);
    expect(w.workerRequests).toBe(3);
    expect(w.objects.map((o) => o.kind)).toEqual(["Partition", "MortarSession", "UsageAggregator"]); // the registry did nothing
    const [p, s, u] = w.objects;
    expect(p).toMatchObject({ rpc: 6, alarm: 1, requests: 7, billedRequests: 7, rowsWritten: 32, rowsRead: 10, methods: { append: 4, settle: 2 }, writers: { "INSERT INTO log": 20, "DELETE FROM d": 10 } });
    expect(s).toMatchObject({ wsMessages: 40, requests: 40, billedRequests: 2, constructs: 1, scope: "per-connection" });
    expect(u).toMatchObject({ requests: 3, rowsWritten: 13, constructs: 1, scope: "per-tenant" });
    expect(w.totals).toEqual({ requests: 50, wsMessages: 40, billedRequests: 12, rowsWritten: 45, rowsRead: 10, subrequests: 0 });
  });

  it("divides by messages, groups by class and ranks the writing statements", () => {
    expect(unitRates(w, 10)).toEqual({ doRequests: 1.2, workerRequests: 0.3, rowsWritten: 4.5, rowsRead: 1 });
    expect(byKind(w).map((k) => [k.kind, k.instances, k.rowsWritten])).toEqual([["Partition", 1, 32], ["UsageAggregator", 1, 13], ["MortarSession", 1, 0]]);
    expect(topWriters(w, 1)).toEqual([{ kind: "Partition", statement: "INSERT INTO log", rows: 20 }]);
    expect(requestMix(w.objects)).toEqual({ append: 4, settle: 2, "(alarm)": 1, "(ws message)": 40, report: 3 });
  });

  it("flags a per-tenant or global object above 1 request per 1,000 messages, never a per-partition one", () => {
    const c = census(w, 2_000);
    expect(c.map((e) => [e.kind, e.perThousand, e.hot])).toEqual([["MortarSession", 20, false], ["Partition", 3.5, false], ["UsageAggregator", 1.5, true]]);
    expect(census(w, 3_000).find((e) => e.kind === "UsageAggregator")).toMatchObject({ perThousand: 1, hot: false }); // exactly 1: not above
    expect(c[1]!.methods).toEqual({ append: 2, settle: 1 });
  });

  it("tells scopes from the class and the idFromName name", () => {
    expect(objectScope("TenantDirectory", "tenants/acme")).toBe("per-tenant");
    expect(objectScope("TenantDirectory", "tenants-index/all")).toBe("global");
    expect(objectScope("UsageAggregator", "usage-index/all")).toBe("global");
    expect(objectScope("MailboxIndex", "mailbox-index/acme")).toBe("per-tenant");
    expect(objectScope("Mailbox", "mailbox/acme/a.b")).toBe("per-mailbox");
    expect(objectScope("ConsumerGroup", "group/acme/1/3/g")).toBe("per-group");
    expect(objectScope("NatsSession", null)).toBe("per-connection");
  });
});

describe("docs/operations.md What it costs", () => {
  const read = <T>(p: string) => JSON.parse(readFileSync(resolve(root, p), "utf8")) as T;
  const records = () => ({ bill: read<BillRecord>("bench/results/bill.json"), cen: read<CensusRecord>("bench/results/census.json") });

  it("is what the recorded bill and census runs render (run `npx tsx bench/tools/gen-cost-doc.ts` after recording)", () => {
    const { bill, cen } = records();
    const page = readFileSync(resolve(root, "docs/operations.md"), "utf8");
    expect(costSectionOf(page)).toBe(renderCostSection(bill, cen));
  });

  it("shows every workload of the record with its $ per million messages", () => {
    const { bill, cen } = records();
    const block = renderCostSection(bill, cen);
    for (const w of bill.detail.workloads) expect(block).toContain(`| (${w.id}) ${w.title} | ${w.messages} |`);
    expect(block).toContain("$1.20 per million messages");
  });

  it("replaces only the block between the markers", () => {
    expect(replaceCostSection(`a\n${BEGIN}\nold\n${END}\nb`, "NEW")).toBe("a\nNEW\nb");
    expect(() => replaceCostSection("no markers", "NEW")).toThrow("no cost block");
  });
});
