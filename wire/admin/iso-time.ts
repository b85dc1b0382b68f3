/**
 * ISO 8601 times whose fields are a real calendar time. `Date.parse` rolls
 * a day the month does not have over into the next month (`2026-02-30` →
 * 2026-03-02) and `24:00` into the next day; a user's typo must be an error
 * instead (group reset `time:…`, the CLI's `--until`, `--since`, `--from-time`).
 */

/** `YYYY-MM-DD`, then optionally `THH:MM[:SS[.fff]]`, then optionally `Z` / `±HH:MM`: the fields captured. */
const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?)?(Z|[+-](\d{2}):(\d{2}))?$/;

/** True when `v` is `YYYY-MM-DD[THH:MM[:SS[.fff]]][Z|±HH:MM]` with a real month, day, hour, minute, second and offset. */
export function isRealIsoTime(v: string): boolean {
  const m = ISO.exec(v);
  if (!m) return false;
  const [y, mo, d, h, mi, s, , oh, om] = m.slice(1).map((x) => (x === undefined || x === "Z" ? 0 : Number(x))) as number[];
  const daysInMonth = new Date(Date.UTC(y!, mo!, 0)).getUTCDate();
  return mo! >= 1 && mo! <= 12 && d! >= 1 && d! <= daysInMonth && h! <= 23 && mi! <= 59 && s! <= 59 && oh! <= 23 && om! <= 59;
}

/**
 * Unix ms of an ISO 8601 date-time **with a time zone** (`2026-05-02T10:00:00Z`,
 * `…+02:00`; seconds optional) whose fields are real (isRealIsoTime), else NaN.
 */
export function isoInstantMs(iso: string): number {
  const m = ISO.exec(iso);
  return m && m[4] !== undefined && m[7] !== undefined && isRealIsoTime(iso) ? Date.parse(iso) : NaN;
}
