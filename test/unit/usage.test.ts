/**
 * Pure parts of the counting pipeline: hour buckets, level deltas, report
 * checks, series keys, the usage mapping, the Prometheus rendering (parsed
 * back with a real parser), MortarMQ wire counters, and docs/operations.md
 * naming every metric.
 */
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { METRICS, initialSeries, metricDef, parseSeries, series, usageFieldOf } from "../../objects/usage/catalog";
import { renderPrometheus } from "../../objects/usage/prometheus";
import { Buckets, HOUR_MS, checkReport, hourOf, levelDeltas } from "../../objects/usage/report";
import { WireCounters } from "../../objects/session/wire-counters";
import { encodeFrames, errFrame, okFrame, Op, ErrorCode } from "../../wire/mortar";
import { parseMetrics, sampleValue } from "../fixtures/prometheus";

const H = Date.UTC(2026, 0, 1, 10);

describe("Buckets", () => {
  it("sums per hour and series; entries are hour-ascending", () => {
    const b = new Buckets();
    b.add("a", 2, H + 5);
    b.add("a", 3, H + HOUR_MS - 1);
    b.add("a", 1, H + HOUR_MS);
    b.add("b", 0, H);
    b.add("b", 4, H - 1);
    expect(b.entries()).toEqual([[H - HOUR_MS, "b", 4], [H, "a", 5], [H + HOUR_MS, "a", 1]]);
    b.clear();
    expect(b.empty).toBe(true);
  });

  it("splits a span's seconds across the hours it covers", () => {
    const b = new Buckets();
    b.addSpan("s", H + HOUR_MS - 1500, H + HOUR_MS + 2500);
    expect(b.entries()).toEqual([[H, "s", 1.5], [H + HOUR_MS, "s", 2.5]]);
  });

  it("hourOf is the start of the hour (property)", () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: 2 ** 45 }), (ms) => {
      const h = hourOf(ms);
      return h % HOUR_MS === 0 && h <= ms && ms < h + HOUR_MS;
    }));
  });

  it("entries round-trip through addEntries (what persist/restore does)", () => {
    fc.assert(fc.property(fc.array(fc.tuple(fc.constantFrom("a", "b", "c"), fc.integer({ min: 1, max: 1000 }), fc.integer({ min: 0, max: 5 }))), (adds) => {
      const b = new Buckets();
      for (const [k, n, h] of adds) b.add(k, n, H + h * HOUR_MS);
      const c = new Buckets();
      c.addEntries(b.entries());
      expect(c.entries()).toEqual(b.entries());
    }));
  });
});

describe("levelDeltas", () => {
  it("reports changes, withdraws vanished levels, skips unchanged ones", () => {
    expect(levelDeltas({ a: 5, b: 2, c: 0 }, { a: 5, b: 7, d: 3 })).toEqual([["b", -5], ["d", -3]]);
    expect(levelDeltas({ a: 1 }, {})).toEqual([["a", 1]]);
  });

  it("applying the deltas to what was reported gives the current levels (property)", () => {
    const levels = fc.dictionary(fc.constantFrom("a", "b", "c", "d"), fc.integer({ min: -100, max: 100 }));
    fc.assert(fc.property(levels, levels, (current, reported) => {
      const sum: Record<string, number> = { ...reported };
      for (const [k, d] of levelDeltas(current, reported)) sum[k] = (sum[k] ?? 0) + d;
      for (const k of new Set([...Object.keys(current), ...Object.keys(sum)])) expect(sum[k] ?? 0).toBe(current[k] ?? 0);
    }));
  });
});

describe("checkReport", () => {
  it("accepts a well-formed report and names what is wrong otherwise", () => {
    expect(checkReport({ reporter: "r", no: 1, at: 0, entries: [[H, "x", 1]] })).toBeNull();
    expect(checkReport(null)).toMatch(/reporter/);
    expect(checkReport({ reporter: "r", no: 1.5, entries: [] })).toMatch(/no/);
    expect(checkReport({ reporter: "r", no: 1, entries: [[H, "x", Number.NaN]] })).toMatch(/entry/);
  });
});

describe("series keys", () => {
  it("round-trip through parseSeries, escaping included", () => {
    const k = series("mortarmq_mq9_requests_total", { verb: 'a"b\\c\nd', outcome: "ok", transport: "http" });
    expect(k).toBe('mortarmq_mq9_requests_total{verb="a\\"b\\\\c\\nd",outcome="ok",transport="http"}');
    expect(parseSeries(k)?.labels).toEqual({ verb: 'a"b\\c\nd', outcome: "ok", transport: "http" });
    expect(parseSeries("mortarmq_messages_published_total")).toEqual({ name: "mortarmq_messages_published_total", labels: {}, labelText: "" });
    expect(parseSeries('x{a="1"')).toBeNull();
    expect(() => series("mortarmq_typo_total")).toThrow(/unknown metric/);
  });

  it("map to usage fields: request ops count as requests, pushes do not", () => {
    expect(usageFieldOf(series("mortarmq_frames_received_total", { op: "pub" }))).toBe("requests");
    expect(usageFieldOf(series("mortarmq_frames_received_total", { op: "err" }))).toBeNull();
    expect(usageFieldOf(series("mortarmq_frames_sent_total", { op: "msg" }))).toBeNull();
    expect(usageFieldOf(series("mortarmq_mq9_requests_total", { verb: "msg_send", outcome: "ok", transport: "nats" }))).toBe("requests");
    expect(usageFieldOf(series("mortarmq_published_bytes_total"))).toBe("bytes_in");
    expect(usageFieldOf(series("mortarmq_mq9_returned_bytes_total", { verb: "query" }))).toBe("bytes_out");
    expect(usageFieldOf(series("mortarmq_stored_bytes", { system: "mq9" }))).toBe("storage_bytes");
    expect(usageFieldOf(series("mortarmq_messages_acked_total"))).toBeNull();
  });

  it("every metric follows Prometheus naming (counters _total, base units)", () => {
    for (const m of METRICS) {
      expect(m.name).toMatch(/^mortarmq_[a-z0-9_]+$/);
      expect(m.name.endsWith("_total")).toBe(m.type === "counter");
      expect(m.name).not.toMatch(/_(ms|milliseconds|kb|mb|kib|mib)(_|$)/);
      expect(metricDef(m.name)).toBe(m);
    }
  });
});

describe("renderPrometheus", () => {
  it("renders HELP/TYPE for every metric and samples with the tenant label; a parser reads them back", () => {
    const text = renderPrometheus([
      { tenant: "acme", series: [[series("mortarmq_frames_received_total", { op: "pub" }), 12], [series("mortarmq_connection_seconds_total", { protocol: "nats" }), 1.25]] },
      { tenant: "b\"eta", series: [[series("mortarmq_open_connections", { protocol: "mortar" }), 3], ["not_a_metric", 1], ["broken{", 2]] },
    ], { version: "1.2.3" });
    const samples = parseMetrics(text);
    expect(samples.filter((s) => s.value !== 0)).toEqual([
      { name: "mortarmq_build_info", type: "gauge", labels: { version: "1.2.3" }, value: 1 },
      { name: "mortarmq_frames_received_total", type: "counter", labels: { tenant: "acme", op: "pub" }, value: 12 },
      { name: "mortarmq_open_connections", type: "gauge", labels: { tenant: 'b"eta', protocol: "mortar" }, value: 3 },
      { name: "mortarmq_connection_seconds_total", type: "counter", labels: { tenant: "acme", protocol: "nats" }, value: 1.25 },
    ]);
    expect(sampleValue(samples, "mortarmq_frames_received_total")).toBe(12);
    expect(text.match(/^# TYPE /gm)?.length).toBe(METRICS.length);
  });

  it("a tenant shows each initial series at 0 until it has a value; its own values are not doubled; build info has no tenant", () => {
    const published = series("mortarmq_messages_published_total");
    const text = renderPrometheus([
      { tenant: "fresh", series: [] },
      { tenant: "busy", series: [[published, 7], [series("mortarmq_open_connections", { protocol: "nats" }), 2], [series("mortarmq_build_info", { version: "9" }), 5]] },
    ], { version: "0.1.0" });
    const samples = parseMetrics(text);
    const keys = METRICS.flatMap(initialSeries);
    expect(keys.length).toBeGreaterThan(30);
    expect(keys).toContain('mortarmq_open_connections{protocol="mortar"}');
    expect(keys).toContain("mortarmq_mq9_mailboxes");
    expect(keys.some((k) => k.startsWith("mortarmq_frames_received_total") || k.startsWith("mortarmq_errors_total") || k.startsWith("mortarmq_build_info"))).toBe(false);
    const of = (tenant: string) => samples.filter((s) => s.labels.tenant === tenant);
    expect(of("fresh")).toHaveLength(keys.length);
    expect(of("fresh").every((s) => s.value === 0)).toBe(true);
    expect(of("busy")).toHaveLength(keys.length);
    expect(sampleValue(samples, "mortarmq_messages_published_total", { tenant: "busy" })).toBe(7);
    expect(samples.filter((s) => s.name === "mortarmq_open_connections" && s.labels.tenant === "busy").map((s) => [s.labels.protocol, s.value]))
      .toEqual([["nats", 2], ["mortar", 0]]);
    expect(samples.filter((s) => s.name === "mortarmq_build_info")).toEqual([{ name: "mortarmq_build_info", type: "gauge", labels: { version: "0.1.0" }, value: 1 }]);
    expect(renderPrometheus([], { version: "0.1.0" })).toMatch(/^mortarmq_build_info\{version="0\.1\.0"\} 1$/m);
  });
});

describe("WireCounters", () => {
  it("counts frames by op and ERR frames by code", () => {
    const w = new WireCounters();
    w.frameIn(Op.PUB);
    w.frameIn(Op.PUB);
    w.frameIn(Op.PING);
    const out = encodeFrames([okFrame(Op.PUB), okFrame(Op.PUB), errFrame(ErrorCode.BACKPRESSURE, Op.PUB, "slow down")]);
    w.sent(out);
    const got: Record<string, number> = {};
    w.drain((k, n) => (got[k] = n));
    expect(got).toEqual({
      [series("mortarmq_frames_received_total", { op: "pub" })]: 2,
      [series("mortarmq_frames_received_total", { op: "ping" })]: 1,
      [series("mortarmq_frames_sent_total", { op: "ok" })]: 2,
      [series("mortarmq_frames_sent_total", { op: "err" })]: 1,
      [series("mortarmq_errors_total", { code: "0x4001", name: "BACKPRESSURE" })]: 1,
    });
    const again: string[] = [];
    w.drain((k) => again.push(k));
    expect(again).toEqual([]);
  });
});

describe("docs/operations.md", () => {
  it("lists every metric of the catalog with its type", () => {
    const doc = readFileSync(new URL("../../docs/operations.md", import.meta.url), "utf8");
    for (const m of METRICS) expect(doc).toMatch(new RegExp(`\\| \`${m.name}\` \\| ${m.type} \\|`));
  });
});
