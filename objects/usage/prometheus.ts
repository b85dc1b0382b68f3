/**
 * Prometheus text exposition (format 0.0.4) of the tenants' series (pure).
 * Every metric of the catalog gets its `# HELP` and `# TYPE` lines, then one
 * sample per (tenant, series) with the `tenant` label first — plus a 0 for
 * each of the catalog's initial series a tenant has no value for yet — and
 * the broker-scope samples (`mortarmq_build_info{version="…"} 1`). Series of
 * unknown or broker-scope metrics in a tenant's list are left out.
 */
import { METRICS, escapeLabelValue, initialSeries, metricDef, parseSeries, series } from "./catalog";

/** Content-Type of the exposition. */
export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** One tenant's series, as `UsageAggregator.metrics()` returns them. */
export interface TenantSeries {
  tenant: string;
  series: readonly (readonly [string, number])[];
}

/** What the broker itself exports (broker-scope metrics). */
export interface BrokerInfo {
  /** The broker's version (package.json), e.g. "0.1.0". */
  version: string;
}

/** The initial series of every tenant-scope metric, in catalog order (computed once). */
let initialKeys: string[] | undefined;

/**
 * Renders the exposition text for `tenants` (in the given order; a tenant
 * with an empty `series` still shows its initial series at 0) and `broker`.
 */
export function renderPrometheus(tenants: readonly TenantSeries[], broker: BrokerInfo): string {
  initialKeys ??= METRICS.flatMap(initialSeries);
  const byMetric = new Map<string, string[]>();
  byMetric.set("mortarmq_build_info", [`${series("mortarmq_build_info", { version: broker.version })} 1`]);
  for (const t of tenants) {
    const tenantLabel = `tenant="${escapeLabelValue(t.tenant)}"`;
    const present = new Set(t.series.map(([key]) => key));
    const zeros = initialKeys.filter((key) => !present.has(key)).map((key) => [key, 0] as const);
    for (const [key, value] of [...t.series, ...zeros]) {
      const p = parseSeries(key);
      if (!p || metricDef(p.name)?.scope === "broker") continue;
      const labels = p.labelText ? `${tenantLabel},${p.labelText}` : tenantLabel;
      let lines = byMetric.get(p.name);
      if (!lines) byMetric.set(p.name, (lines = []));
      lines.push(`${p.name}{${labels}} ${formatValue(value)}`);
    }
  }
  const out: string[] = [];
  for (const m of METRICS) {
    out.push(`# HELP ${m.name} ${m.help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")}`);
    out.push(`# TYPE ${m.name} ${m.type}`);
    for (const line of byMetric.get(m.name) ?? []) out.push(line);
  }
  return out.join("\n") + "\n";
}

/** A sample value: integers without exponent, others as JS renders them (Go-parsable). */
function formatValue(v: number): string {
  if (Number.isInteger(v) && Math.abs(v) < 1e21) return v.toFixed(0);
  if (Number.isNaN(v)) return "NaN";
  if (!Number.isFinite(v)) return v > 0 ? "+Inf" : "-Inf";
  return String(Math.round(v * 1e6) / 1e6);
}
