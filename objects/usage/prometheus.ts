/**
 * Prometheus text exposition (format 0.0.4) of the tenants' series (pure).
 * Every metric of the catalog gets its `# HELP` and `# TYPE` lines, then one
 * sample per (tenant, series) with the `tenant` label first. Series of
 * unknown metrics are left out.
 */
import { METRICS, escapeLabelValue, parseSeries } from "./catalog";

/** Content-Type of the exposition. */
export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** One tenant's series, as `UsageAggregator.metrics()` returns them. */
export interface TenantSeries {
  tenant: string;
  series: readonly (readonly [string, number])[];
}

/** Renders the exposition text for `tenants` (in the given order). */
export function renderPrometheus(tenants: readonly TenantSeries[]): string {
  const byMetric = new Map<string, string[]>();
  for (const t of tenants) {
    const tenantLabel = `tenant="${escapeLabelValue(t.tenant)}"`;
    for (const [key, value] of t.series) {
      const p = parseSeries(key);
      if (!p) continue;
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
