/**
 * `/metrics` of a fresh broker (this file's own storage, open mode) already
 * has samples: `mortarmq_build_info{version="<package.json version>"} 1` and
 * a zero for every series of tenant `default` whose labels are known in
 * advance (docs/operations.md "Series before any traffic") — so a dashboard
 * or an alert shows 0, not "no data". Nothing is stored to serve them: the
 * tenant's aggregator is not even created. Traffic then moves its series by
 * the exact amount and leaves the others at 0.
 */
import { SELF, env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import pkg from "../../../package.json";
import type { Env } from "../../../objects/env";
import { METRICS } from "../../../objects/usage/catalog";
import { usageIndexStub } from "../../../objects/usage/stub";
import { parseMetrics, sampleValue, type Sample } from "../../fixtures/prometheus";
import { freshAddress } from "../helpers/mq9";

const testEnv = env as unknown as Env;

async function scrape(): Promise<Sample[]> {
  const res = await SELF.fetch("http://broker/metrics");
  expect(res.status).toBe(200);
  return parseMetrics(await res.text());
}

/** The tenant series every known tenant shows from the start: `name{labels}` → value. */
const ZERO_SERIES = [
  "mortarmq_bytes_received_total{protocol=mortar}", "mortarmq_bytes_received_total{protocol=nats}", "mortarmq_bytes_received_total{protocol=http}",
  "mortarmq_bytes_sent_total{protocol=mortar}", "mortarmq_bytes_sent_total{protocol=nats}", "mortarmq_bytes_sent_total{protocol=http}",
  "mortarmq_connections_opened_total{protocol=mortar}", "mortarmq_connections_opened_total{protocol=nats}",
  "mortarmq_open_connections{protocol=mortar}", "mortarmq_open_connections{protocol=nats}",
  "mortarmq_connection_seconds_total{protocol=mortar}", "mortarmq_connection_seconds_total{protocol=nats}",
  "mortarmq_messages_published_total{}", "mortarmq_published_bytes_total{}", "mortarmq_non_idempotent_publishes_total{}",
  "mortarmq_publishes_deduplicated_total{}", "mortarmq_messages_delivered_total{}", "mortarmq_delivered_bytes_total{}",
  "mortarmq_messages_acked_total{}", "mortarmq_messages_redelivered_total{}", "mortarmq_messages_dead_lettered_total{}",
  "mortarmq_messages_retention_deleted_total{}",
  "mortarmq_mq9_messages_sent_total{}", "mortarmq_mq9_sent_bytes_total{}",
  "mortarmq_mq9_messages_returned_total{verb=fetch}", "mortarmq_mq9_messages_returned_total{verb=query}", "mortarmq_mq9_messages_returned_total{verb=push}",
  "mortarmq_mq9_returned_bytes_total{verb=fetch}", "mortarmq_mq9_returned_bytes_total{verb=query}", "mortarmq_mq9_returned_bytes_total{verb=push}",
  "mortarmq_mq9_mailboxes{}",
  "mortarmq_push_attempts_total{outcome=ok}", "mortarmq_push_attempts_total{outcome=http_error}",
  "mortarmq_push_attempts_total{outcome=timeout}", "mortarmq_push_attempts_total{outcome=connection_error}",
  "mortarmq_push_dead_lettered_total{}", "mortarmq_push_subscriptions{}", "mortarmq_push_in_flight{}", "mortarmq_push_backlog{}",
  "mortarmq_long_polls_waiting{kind=mq9_fetch}", "mortarmq_long_polls_waiting{kind=mortar_pull}",
  "mortarmq_stored_bytes{system=mortar}", "mortarmq_stored_bytes{system=mq9}",
  "mortarmq_telemetry_reports_total{result=applied}", "mortarmq_telemetry_reports_total{result=duplicate}",
  "mortarmq_tenant_rows_written_total{}", "mortarmq_tenant_rows_read_total{}",
  "mortarmq_tenant_do_requests_total{kind=rpc}", "mortarmq_tenant_do_requests_total{kind=fetch}",
  "mortarmq_tenant_do_requests_total{kind=alarm}", "mortarmq_tenant_do_requests_total{kind=websocket}",
  "mortarmq_tenant_worker_requests_total{}",
];

/** `name{a=x,b=y}` of a sample without its tenant label (labels in output order). */
const key = (s: Sample) => `${s.name}{${Object.entries(s.labels).filter(([k]) => k !== "tenant").map(([k, v]) => `${k}=${v}`).join(",")}}`;

describe("/metrics of a fresh broker", () => {
  it("has build info with the package version, and a zero for each of the open tenant's known series; it creates nothing", async () => {
    const samples = await scrape();
    const info = samples.filter((s) => s.name === "mortarmq_build_info");
    expect(info).toEqual([{ name: "mortarmq_build_info", type: "gauge", labels: { version: pkg.version }, value: 1 }]);

    const tenant = samples.filter((s) => s.name !== "mortarmq_build_info");
    expect(tenant.every((s) => s.labels.tenant === "default")).toBe(true);
    expect(tenant.map(key).sort()).toEqual([...ZERO_SERIES].sort());
    expect(tenant.every((s) => s.value === 0)).toBe(true);
    // every family of the catalog that has no per-request labels (op, code, verb × outcome, topic × group) starts with a sample
    const withSamples = new Set(samples.map((s) => s.name));
    expect(METRICS.map((m) => m.name).filter((n) => !withSamples.has(n)).sort())
      .toEqual(["mortarmq_errors_total", "mortarmq_frames_received_total", "mortarmq_frames_sent_total",
        "mortarmq_messages_retention_skipped_total", "mortarmq_mq9_requests_total", "mortarmq_permission_denied_total"]); // labels that come with traffic (topic × group, operation)

    expect(await usageIndexStub(testEnv).tenants()).toEqual([]); // the zeros needed no aggregator: none was created
  });

  it("traffic moves its own series by the exact amount; the other series stay at 0", async () => {
    const address = freshAddress("fresh");
    const create = await SELF.fetch("http://broker/mq9/$mq9.AI.MAILBOX.CREATE", { method: "POST", body: JSON.stringify({ name: address, ttl: 0 }) });
    expect(create.status).toBe(200);
    await create.arrayBuffer();
    const send = await SELF.fetch(`http://broker/mq9/$mq9.AI.MSG.SEND.${address}`, { method: "POST", body: "hello" });
    expect(send.status).toBe(200);
    await send.arrayBuffer();

    let samples: Sample[] = [];
    for (let i = 0; i < 100; i++) { // the Mailbox reports within its flush interval (100 ms here)
      samples = await scrape();
      if (sampleValue(samples, "mortarmq_mq9_messages_sent_total", { tenant: "default" }) === 1) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const v = (name: string, labels: Record<string, string> = {}) => sampleValue(samples, name, { tenant: "default", ...labels });
    expect(v("mortarmq_mq9_messages_sent_total")).toBe(1);
    expect(v("mortarmq_mq9_sent_bytes_total")).toBe(5);
    expect(v("mortarmq_mq9_mailboxes")).toBe(1);
    expect(v("mortarmq_mq9_requests_total", { verb: "msg_send", outcome: "ok", transport: "http" })).toBe(1);
    for (const [name, labels] of [
      ["mortarmq_open_connections", { protocol: "nats" }], ["mortarmq_bytes_received_total", { protocol: "mortar" }],
      ["mortarmq_messages_published_total", {}], ["mortarmq_long_polls_waiting", { kind: "mortar_pull" }],
    ] as const) {
      const found = samples.filter((s) => s.name === name && s.labels.tenant === "default" && Object.entries(labels).every(([k, x]) => s.labels[k] === x));
      expect(found.map((s) => s.value), name).toEqual([0]);
    }
    expect(samples.filter((s) => s.name === "mortarmq_build_info")).toHaveLength(1);
  });
});
