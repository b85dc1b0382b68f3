/**
 * Pure text formatting for the CLI's human output: aligned tables, byte
 * sizes, rates, times, and payloads shown as text when they are printable
 * UTF-8 (base64 otherwise).
 */

/** A table cell: strings and numbers print as they are; null/undefined as "-". */
export type Cell = string | number | bigint | boolean | null | undefined;

/** Display width of `s` (code points; wide CJK characters count 2). */
export function displayWidth(s: string): number {
  let w = 0;
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    w += isWide(cp) ? 2 : 1;
  }
  return w;
}

function isWide(cp: number): boolean {
  return (cp >= 0x1100 && cp <= 0x115f) || (cp >= 0x2e80 && cp <= 0xa4cf) || (cp >= 0xac00 && cp <= 0xd7a3)
    || (cp >= 0xf900 && cp <= 0xfaff) || (cp >= 0xfe30 && cp <= 0xfe4f) || (cp >= 0xff00 && cp <= 0xff60)
    || (cp >= 0xffe0 && cp <= 0xffe6) || (cp >= 0x1f300 && cp <= 0x1faff) || (cp >= 0x20000 && cp <= 0x3fffd);
}

function cellText(c: Cell): string {
  if (c === null || c === undefined) return "-";
  return visible(String(c));
}

/** C0 and C1 control characters and DEL: what a terminal acts on instead of showing. */
const CONTROL_RE = /[\u0000-\u001f\u007f-\u009f]/g;

/**
 * `s` with every control character written as a `\xNN` escape, so a name
 * stored by another client (a topic name is any UTF-8, NUL, ESC and CR
 * included) cannot move the cursor, forge table rows, retitle the window or
 * drive the terminal when a table shows it.
 */
export function visible(s: string): string {
  return s.replace(CONTROL_RE, (ch) => `\\x${ch.charCodeAt(0).toString(16).padStart(2, "0")}`);
}

/**
 * Renders rows under upper-case headers, columns separated by two spaces,
 * numeric columns (every non-empty cell a number/bigint) right-aligned.
 * Returns "" plus the headers when there are no rows.
 */
export function formatTable(headers: string[], rows: Cell[][]): string {
  const text = rows.map((r) => headers.map((_, i) => cellText(r[i])));
  const numeric = headers.map((_, i) =>
    rows.length > 0 && rows.every((r) => r[i] === null || r[i] === undefined || typeof r[i] === "number" || typeof r[i] === "bigint"));
  const widths = headers.map((h, i) => Math.max(displayWidth(h), ...text.map((r) => displayWidth(r[i]!))));
  const line = (cells: string[], isHeader: boolean) =>
    cells
      .map((c, i) => {
        const pad = " ".repeat(widths[i]! - displayWidth(c));
        return numeric[i] && !isHeader ? pad + c : i === cells.length - 1 ? c : c + pad;
      })
      .join("  ")
      .trimEnd();
  return [line(headers.map((h) => h.toUpperCase()), true), ...text.map((r) => line(r, false))].join("\n") + "\n";
}

/** `key: value` lines with the keys aligned. */
export function formatFields(fields: [string, Cell][]): string {
  const w = Math.max(...fields.map(([k]) => k.length));
  return fields.map(([k, v]) => `${(k + ":").padEnd(w + 1)} ${cellText(v)}`).join("\n") + "\n";
}

/** 1536 → "1.5 KiB" (binary units, bytes below 1 KiB). */
export function formatBytes(n: number): string {
  if (!Number.isFinite(n)) return "-";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = n;
  let u = 0;
  while (Math.abs(v) >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${v} B` : `${v.toFixed(v >= 100 ? 0 : 1)} ${units[u]}`;
}

/** Messages per second over `ms` milliseconds, rounded (0 when no time passed). */
export function ratePerSecond(count: number, ms: number): number {
  return ms > 0 ? Math.round((count * 1000) / ms) : 0;
}

/** 1234 ms → "1.23 s", 45 ms → "45 ms". */
export function formatDuration(ms: number): string {
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${Math.round(ms)} ms`;
}

/** Unix seconds → ISO-8601 UTC without milliseconds ("2026-01-01T00:00:00Z"). */
export function formatUnixSeconds(s: number): string {
  return new Date(s * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** `bytes` as UTF-8 text when it decodes and has no control characters other than tab/newline/CR; else null. */
export function printableText(bytes: Uint8Array): string | null {
  let text: string;
  try {
    text = strictUtf8.decode(bytes);
  } catch {
    return null;
  }
  // eslint-disable-next-line no-control-regex
  return /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(text) ? null : text;
}

/** How a payload is shown: the text itself, or base64 marked as such. */
export interface PayloadView {
  encoding: "utf8" | "base64";
  text: string;
}

/** Decodes a base64 payload (as mq9 replies carry it) for display. */
export function viewPayload(base64: string): PayloadView {
  const bytes = Buffer.from(base64, "base64");
  const text = printableText(bytes);
  return text === null ? { encoding: "base64", text: base64 } : { encoding: "utf8", text };
}

/**
 * One-line table form of a payload: printable text with newlines/tabs shown
 * as \n / \t, base64 prefixed with "base64:", cut to `max` characters (…).
 */
export function payloadCell(view: PayloadView, max = 80): string {
  const s = view.encoding === "utf8" ? view.text.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/\r/g, "\\r").replace(/\t/g, "\\t") : `base64:${view.text}`;
  const chars = [...s];
  return chars.length > max ? chars.slice(0, max - 1).join("") + "…" : s;
}
