/** Usage: the tenant's hourly usage as charts (GET /v0/usage) and its quotas; the operator also sees every tenant and can switch. */
import { useState } from "preact/hooks";
import type { TenantUsageAnswer } from "../../wire/admin/console";
import { can, get, identity, request } from "../api";
import { Chart } from "../chart";
import { bytes, count, time } from "../format";
import { Status, Table, usePoll } from "../ui";

interface TenantList { tenants: { id: string; name: string; source: string; created_at: string | null; deleted_at: string | null }[] }

export function Usage({ tenant, onSwitch }: { tenant: string; onSwitch: (t: string) => void }) {
  const [hours, setHours] = useState(24);
  // without usage.read the page asks nothing (each refusal would be counted) and says why
  const allowed = can("usage.read", "any");
  const { data, error } = usePoll(async () => (allowed ? get<TenantUsageAnswer>(`/v0/usage?from=${Date.now() - hours * 3_600_000}`) : null), 60_000, [tenant, hours, allowed]);
  const operator = identity()?.role === "operator";
  const tenants = usePoll(() => (operator ? request<TenantList>("GET", "/admin/tenants", undefined, false) : Promise.resolve(null)), 0, [operator]);
  const x = (data?.hours ?? []).map((h) => Date.parse(h.hour) / 1000);
  const col = (f: (h: TenantUsageAnswer["hours"][number]) => number) => (data?.hours ?? []).map(f);
  return (
    <section aria-labelledby="usage-h">
      <h2 id="usage-h">Usage of tenant {tenant}</h2>
      <label>Range <select value={hours} onChange={(e) => setHours(Number(e.currentTarget.value))}>
        <option value={24}>last 24 hours</option><option value={168}>last 7 days</option><option value={744}>last 31 days</option>
      </select></label>
      {allowed
        ? <Status error={error}>{data ? `${time(data.from)} to ${time(data.to)}` : "Loading…"}</Status>
        : <p>This token may not read usage (it has no <code>usage.read</code> scope).</p>}
      {data && (
        <>
          <dl class="tiles">
            <div><dt>Requests</dt><dd>{count(data.totals.requests)}</dd></div>
            <div><dt>Messages in / out</dt><dd>{count(data.totals.messages_in)} / {count(data.totals.messages_out)}</dd></div>
            <div><dt>Bytes in / out</dt><dd>{bytes(data.totals.bytes_in)} / {bytes(data.totals.bytes_out)}</dd></div>
            <div><dt>Connection time</dt><dd>{count(data.totals.connection_seconds)} s</dd></div>
            <div><dt>Peak storage</dt><dd>{bytes(data.totals.storage_bytes)}</dd></div>
            <div><dt>Rows written / read</dt><dd>{count(data.totals.rows_written)} / {count(data.totals.rows_read)}</dd></div>
            <div><dt>Durable Object requests</dt><dd>{count(data.totals.do_requests)}</dd></div>
            <div><dt>Worker requests</dt><dd>{count(data.totals.worker_requests)}</dd></div>
          </dl>
          <div class="charts">
            <Chart title="Messages per hour" x={x} format={(v) => `${count(v)} msgs`} series={[
              { label: "in", values: col((h) => h.messages_in) }, { label: "out", values: col((h) => h.messages_out) }]} />
            <Chart title="Bytes per hour" x={x} format={bytes} series={[
              { label: "in", values: col((h) => h.bytes_in) }, { label: "out", values: col((h) => h.bytes_out) }]} />
            <Chart title="Requests per hour" x={x} format={(v) => `${count(v)} req`} series={[{ label: "requests", values: col((h) => h.requests) }]} />
            <Chart title="Cost units per hour (Cloudflare's bill)" x={x} format={count} series={[
              { label: "rows written", values: col((h) => h.rows_written) }, { label: "DO requests", values: col((h) => h.do_requests) },
              { label: "Worker requests", values: col((h) => h.worker_requests) }]} />
            <Chart title="Storage (highest in the hour)" x={x} format={bytes} series={[{ label: "stored", values: col((h) => h.storage_bytes) }]} />
          </div>
          <Table caption="Quotas" head={["Quota", "Limit"]} rows={[
            ["Publish rate", data.quotas.publish_msgs_per_s === null ? "unlimited" : `${count(data.quotas.publish_msgs_per_s)} msg/s`],
            ["Publish bytes", data.quotas.publish_bytes_per_s === null ? "unlimited" : `${bytes(data.quotas.publish_bytes_per_s)}/s`],
            ["Storage", data.quotas.storage_bytes === null ? "unlimited" : bytes(data.quotas.storage_bytes)],
            ["Connections", data.quotas.connections === null ? "unlimited" : count(data.quotas.connections)],
            ["Mailboxes", data.quotas.mailboxes === null ? "unlimited" : count(data.quotas.mailboxes)],
          ]} />
        </>
      )}
      {operator && tenants.data && (
        <Table caption="Tenants (operator)" head={["Tenant", "Name", "Source", "Created", ""]}
          rows={tenants.data.tenants.filter((t) => t.deleted_at === null).map((t) => [t.id, t.name || "–", t.source, time(t.created_at), t.id === tenant
            ? "shown"
            : <button onClick={() => onSwitch(t.id)}>Switch to {t.id}</button>])} />
      )}
    </section>
  );
}
