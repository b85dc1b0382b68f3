/**
 * Pure parsers for CLI option values. Each throws a USAGE CliError naming
 * the option and the accepted form.
 */
import { usageError } from "./errors";
import { isRealIsoTime } from "../../wire/admin/iso-time";

/**
 * A decimal integer in [min, max].
 * @throws CliError USAGE otherwise
 */
export function parseIntOption(flag: string, value: string, min: number, max: number): number {
  const v = value.trim();
  if (!/^-?\d+$/.test(v)) throw usageError(`${flag} must be a whole number, not "${value}"`);
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    // no upper bound but JavaScript's: "between 1 and 9007199254740991" would read as a real limit
    const range = max === Number.MAX_SAFE_INTEGER ? `at least ${min}` : `between ${min} and ${max}`;
    throw usageError(`${flag} must be ${range}, not ${value}`);
  }
  return n;
}

const U64_MAX = (1n << 64n) - 1n;

/**
 * An unsigned 64-bit integer, decimal or 0x-hex, in [min, 2^64 − 1].
 * @throws CliError USAGE otherwise
 */
export function parseU64Option(flag: string, value: string, min = 0n): bigint {
  const v = value.trim();
  if (!/^(0x[0-9a-fA-F]+|\d+)$/.test(v)) throw usageError(`${flag} must be a decimal or 0x-hex integer, not "${value}"`);
  const n = BigInt(v);
  if (n < min || n > U64_MAX) throw usageError(`${flag} must be between ${min} and ${U64_MAX}, not ${value}`);
  return n;
}

/** A random non-zero 64-bit producer id (crypto.getRandomValues). */
export function randomProducerId(): bigint {
  const a = new BigUint64Array(1);
  do crypto.getRandomValues(a);
  while (a[0] === 0n);
  return a[0]!;
}

/**
 * One of `allowed` (exact).
 * @throws CliError USAGE otherwise
 */
export function parseChoice<T extends string>(flag: string, value: string, allowed: readonly T[]): T {
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw usageError(`${flag} must be one of ${allowed.join(", ")}, not "${value}"`);
}

/** A comma list: items trimmed, empty items dropped (`"a, b,,c"` → ["a","b","c"]). */
export function parseList(value: string): string[] {
  return value.split(",").map((s) => s.trim()).filter((s) => s.length > 0);
}

/**
 * A JSON object given on the command line / in a file.
 * @throws CliError USAGE when it is not JSON or not an object
 */
export function parseJsonObject(what: string, text: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw usageError(`${what} is not valid JSON: ${(e as Error).message}`);
  }
  if (v === null || typeof v !== "object" || Array.isArray(v)) throw usageError(`${what} must be a JSON object`);
  return v as Record<string, unknown>;
}

/**
 * A point in time as unix seconds: a whole number of seconds, or an ISO-8601
 * date/time (`2026-05-02`, `2026-05-02T10:00:00Z`; rounded down to the second).
 * @throws CliError USAGE otherwise
 */
export function parseTimeOption(flag: string, value: string): number {
  const v = value.trim();
  if (/^\d+$/.test(v)) return parseIntOption(flag, v, 0, Number.MAX_SAFE_INTEGER);
  const ms = /^\d{4}-\d{2}-\d{2}/.test(v) ? isoTimeMs(flag, v) : NaN;
  if (Number.isNaN(ms) || ms < 0) throw usageError(`${flag} must be unix seconds or an ISO-8601 time, not "${value}"`);
  return Math.floor(ms / 1000);
}

/** Multipliers of the byte units (binary: 1 KiB = 1024 B; `k`, `KB`, `KiB` all mean 1024). */
const BYTE_UNITS: Readonly<Record<string, number>> = {
  "": 1, b: 1,
  k: 1024, kb: 1024, ki: 1024, kib: 1024,
  m: 1024 ** 2, mb: 1024 ** 2, mi: 1024 ** 2, mib: 1024 ** 2,
  g: 1024 ** 3, gb: 1024 ** 3, gi: 1024 ** 3, gib: 1024 ** 3,
  t: 1024 ** 4, tb: 1024 ** 4, ti: 1024 ** 4, tib: 1024 ** 4,
};

/**
 * A byte count: a whole number with an optional binary unit (`512`, `64KiB`,
 * `10MiB`, `1GiB`, `2TiB`; `K`/`KB`/`KiB` all mean 1024) or a decimal one
 * before the unit (`1.5GiB`, rounded down to whole bytes). Result in bytes, in
 * [min, 2^53 − 1].
 * @throws CliError USAGE otherwise
 */
export function parseBytes(flag: string, value: string, min = 0): number {
  const m = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(value.trim());
  const unit = m ? BYTE_UNITS[m[2]!.toLowerCase()] : undefined;
  const n = m && unit !== undefined ? Math.floor(Number(m[1]) * unit) : NaN;
  if (!Number.isSafeInteger(n)) throw usageError(`${flag} must be a byte count such as 1000, 64KiB, 10MiB or 1GiB, not "${value}"`);
  if (n < min) throw usageError(`${flag} must be at least ${min} bytes, not ${value}`);
  return n;
}

/** Multipliers of the duration units, ms. */
const DURATION_UNITS: Readonly<Record<string, number>> = {
  ms: 1, s: 1_000, sec: 1_000, m: 60_000, min: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000,
};

/**
 * A duration in ms: a number with a unit — `ms`, `s`, `m` (minutes), `h`,
 * `d`, `w` — e.g. `500ms`, `90s`, `15m`, `1.5h`, `7d`; a bare number is in
 * `bareUnit` (ms unless said otherwise). Rounded to whole ms, in [min, 2^53 − 1].
 * @throws CliError USAGE otherwise
 */
export function parseDurationMs(flag: string, value: string, min = 0, bareUnit: "ms" | "s" = "ms"): number {
  const m = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(value.trim());
  const unit = m ? DURATION_UNITS[m[2]!.toLowerCase() || bareUnit] : undefined;
  const n = m && unit !== undefined ? Math.round(Number(m[1]) * unit) : NaN;
  if (!Number.isSafeInteger(n)) throw usageError(`${flag} must be a duration such as 500ms, 90s, 15m, 12h or 7d, not "${value}"`);
  if (n < min) throw usageError(`${flag} must be at least ${bareUnit === "s" && min % 1000 === 0 ? `${min / 1000}s` : `${min} ms`}, not ${value}`);
  return n;
}

/**
 * A duration in whole seconds (parseDurationMs with bare numbers in
 * seconds): `90`, `15m`, `1.5h`, `30d`. Never rounded: a value that is not
 * a whole number of seconds (`1.5`, `1500ms`) is refused.
 * @throws CliError USAGE otherwise, or below `minS`
 */
export function parseDurationS(flag: string, value: string, minS = 0): number {
  const ms = parseDurationMs(flag, value, minS * 1000, "s");
  if (ms % 1000 !== 0) throw usageError(`${flag} must be a whole number of seconds, not ${value}`);
  return ms / 1000;
}

/** A time of day without a zone (`2026-05-02T10:00`): Date.parse reads it in this machine's zone. */
const NO_ZONE = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?$/i;

/**
 * An ISO-8601 time as unix ms: a date alone (`2026-05-02`, UTC midnight) or
 * a date and time with a zone (`Z` or an offset: `2026-05-02T10:00Z`,
 * `…T10:00:00+02:00`). A time without a zone is refused — it would be read
 * in the zone of the machine the CLI runs on. NaN when `v` is no real ISO time.
 * @throws CliError USAGE for a time without a zone
 */
function isoTimeMs(flag: string, v: string): number {
  if (NO_ZONE.test(v)) {
    throw usageError(`${flag} "${v}" has no time zone: add Z (UTC) or an offset, e.g. ${v.replace(" ", "T")}Z or ${v.replace(" ", "T")}+02:00`);
  }
  return isRealIsoTime(v) ? Date.parse(v) : NaN;
}

/**
 * A point in time as unix ms: an ISO-8601 date, or date/time with a zone
 * (`2026-05-02T10:00:00Z`; see isoTimeMs), or a duration from `now` (`30m`,
 * `2h`, `7d` — see parseDurationMs).
 * @throws CliError USAGE otherwise
 */
export function parseInstantMs(flag: string, value: string, now = Date.now()): number {
  const v = value.trim();
  if (/^\d{4}-\d{2}-\d{2}/.test(v)) {
    const ms = isoTimeMs(flag, v);
    if (Number.isNaN(ms)) throw usageError(`${flag} must be an ISO-8601 time or a duration from now (e.g. 30m, 2h), not "${value}"`);
    return ms;
  }
  if (!/^\d+(?:\.\d+)?\s*[a-z]+$/i.test(v)) throw usageError(`${flag} must be an ISO-8601 time or a duration from now with a unit (e.g. 30m, 2h, 7d), not "${value}"`);
  return now + parseDurationMs(flag, v, 1);
}
