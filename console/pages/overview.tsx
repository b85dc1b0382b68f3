/** Overview: live charts of the tenant's recent intervals (GET /v0/overview), refreshed every 5 s. */
import type { OverviewAnswer } from "../../wire/admin/console";
import { get } from "../api";
import { Chart } from "../chart";
import { bytes, byteRate, count, rate } from "../format";
import { Status, usePoll } from "../ui";

export function Overview({ tenant }: { tenant: string }) {
  const { data, error } = usePoll(() => get<OverviewAnswer>("/v0/overview?minutes=15"), 5000, [tenant]);
  if (!data) return <Status error={error}>Loading…</Status>;
  const s = data.interval_ms / 1000;
  const x = data.buckets.map((b) => b.t / 1000);
  const col = (f: (b: OverviewAnswer["buckets"][number]) => number) => data.buckets.map(f);
  const quota = data.quotas.storage_bytes;
  const last = data.buckets.at(-1);
  return (
    <section aria-labelledby="overview-h">
      <h2 id="overview-h">Overview of tenant {data.tenant}</h2>
      <Status error={error} />
      <dl class="tiles">
        <div><dt>Messages in (last {s} s)</dt><dd>{rate((last?.messages_in ?? 0) / s)}</dd></div>
        <div><dt>Messages out (last {s} s)</dt><dd>{rate((last?.messages_out ?? 0) / s)}</dd></div>
        <div><dt>Open connections</dt><dd>{count(data.now.connections.mortar)} MortarMQ, {count(data.now.connections.nats)} NATS</dd></div>
        <div><dt>Storage used</dt><dd>{bytes(data.now.storage_bytes)}{quota !== null ? ` of ${bytes(quota)} (${Math.round((100 * data.now.storage_bytes) / quota)} %)` : " (no quota)"}</dd></div>
        <div><dt>Topics</dt><dd>{count(data.now.topics)}</dd></div>
        <div><dt>Mailboxes</dt><dd>{count(data.now.mailboxes)}</dd></div>
        <div><dt>Agents</dt><dd>{count(data.now.agents)}</dd></div>
      </dl>
      <p class="hint">Counts arrive with the objects' reports, at most {data.telemetry_interval_ms / 1000} s after they happen; each point is one {s}-second interval.</p>
      <div class="charts">
        <Chart title="Messages per second" x={x} format={(v) => rate(v)} series={[
          { label: "in", values: col((b) => b.messages_in / s) }, { label: "out", values: col((b) => b.messages_out / s) }]} />
        <Chart title="Bytes per second" x={x} format={byteRate} series={[
          { label: "in", values: col((b) => b.bytes_in / s) }, { label: "out", values: col((b) => b.bytes_out / s) }]} />
        <Chart title="Open connections" x={x} format={(v) => (Number.isInteger(v) ? count(v) : "")} series={[
          { label: "MortarMQ", values: col((b) => b.connections_mortar) }, { label: "NATS", values: col((b) => b.connections_nats) }]} />
        <Chart title={quota !== null ? "Storage used vs quota" : "Storage used"} x={x} format={bytes} series={[
          { label: "stored", values: col((b) => b.storage_bytes) }, ...(quota !== null ? [{ label: "quota", values: col(() => quota) }] : [])]} />
        <Chart title="Errors per second" x={x} format={(v) => rate(v, "err/s")} series={[{ label: "errors", values: col((b) => b.errors / s) }]} />
        <Chart title="Requests per second" x={x} format={(v) => rate(v, "req/s")} series={[{ label: "requests", values: col((b) => b.requests / s) }]} />
      </div>
    </section>
  );
}
