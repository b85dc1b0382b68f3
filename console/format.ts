/** Numbers with units for the console: KiB, msg/s, times, counted nouns, shortened text. Pure. */

/** 1536 → "1.5 KiB" (binary units). */
export function bytes(n: number): string {
  if (!Number.isFinite(n)) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = Math.abs(n);
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  const s = u === 0 ? String(Math.round(v)) : v.toFixed(v < 10 ? 1 : 0);
  return `${n < 0 ? "-" : ""}${s} ${units[u]}`;
}

/** 12345 → "12,345". */
export function count(n: number): string {
  return Number.isFinite(n) ? Math.round(n).toLocaleString("en-US") : "–";
}

/** A count with its noun in the right number: (1, "message") → "1 message", (1200, "message") → "1,200 messages". */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${count(n)} ${n === 1 ? one : many}`;
}

/**
 * The Topics page's count: `total` source topics (GET /v0/topics `total`),
 * each listed with its `.dlq` twin — (3, "acme") → "3 topics in tenant
 * acme, and their 3 dead-letter (.dlq) twins: 6 listed in all".
 */
export function topicsSummary(total: number, tenant: string): string {
  const head = `${plural(total, "topic")} in tenant ${tenant}`;
  if (total === 0) return head;
  return `${head}, and ${total === 1 ? "its dead-letter (.dlq) twin" : `their ${count(total)} dead-letter (.dlq) twins`}: ${count(2 * total)} listed in all`;
}

/**
 * The first `max` characters of `text` (never splitting a surrogate pair)
 * when it is longer, else null (show it whole).
 */
export function preview(text: string, max: number): string | null {
  if (text.length <= max) return null;
  const end = /[\uD800-\uDBFF]/.test(text[max - 1] ?? "") ? max - 1 : max;
  return text.slice(0, end);
}

/** A rate with its unit: 3.25 → "3.3 msg/s". */
export function rate(perSecond: number, unit = "msg/s"): string {
  const v = perSecond >= 100 ? Math.round(perSecond).toLocaleString("en-US") : perSecond.toFixed(perSecond >= 10 ? 0 : 1);
  return `${v} ${unit}`;
}

/** Bytes per second: "1.5 KiB/s". */
export function byteRate(perSecond: number): string {
  return `${bytes(perSecond)}/s`;
}

/** An ISO time as "2026-01-01 10:00:00 UTC"; "never" for null. */
export function time(iso: string | null): string {
  if (iso === null) return "never";
  return iso.replace("T", " ").replace(/\.\d{3}Z$/, " UTC").replace(/Z$/, " UTC");
}

/** Base64 bytes as text when printable UTF-8, else `base64:…`. */
export function payloadText(b64: string): string {
  const bin = atob(b64);
  const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
  try {
    const text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    if (!/[\u0000-\u0008\u000e-\u001f\u007f]/.test(text)) return text;
  } catch {
    /* not UTF-8 */
  }
  return `base64:${b64}`;
}

/** A duration in ms in its largest whole unit: 604800000 → "7 d", 1500 → "1.5 s". */
export function duration(ms: number): string {
  const units: [number, string][] = [[86_400_000, "d"], [3_600_000, "h"], [60_000, "min"], [1000, "s"]];
  for (const [size, unit] of units) if (ms >= size) return `${Number((ms / size).toFixed(1))} ${unit}`;
  return `${ms} ms`;
}

/**
 * Retention settings in words: `{ms: 604800000, bytes: 0, messages: 0,
 * discard: "old"}` → "7 d"; limits joined by ", ", "discard new" appended
 * when set; "keep all" when nothing limits the log (or null).
 */
export function retention(r: { ms: number; bytes: number; messages: number; discard: string } | null): string {
  if (r === null) return "keep all";
  const parts: string[] = [];
  if (r.ms > 0) parts.push(duration(r.ms));
  if (r.bytes > 0) parts.push(bytes(r.bytes));
  if (r.messages > 0) parts.push(`${count(r.messages)} records`);
  if (parts.length === 0) return "keep all";
  if (r.discard === "new") parts.push("discard new");
  return parts.join(", ");
}
