/**
 * mail_address rules (mq9 spec, mail_address 格式规范; DESIGN.md §5):
 * 1–128 characters of `[a-z0-9.]`, first and last character a letter or
 * digit, no `..`. Upper case, `-`, `_`, `%` (percent-encoding) and every
 * other character are rejected.
 */
import { Mq9Error, echo } from "./errors";

/** Longest mail_address, characters. */
export const MAIL_ADDRESS_MAX_CHARS = 128;

/** Random bytes in a generated address (160 bits ≥ the required 128). */
export const GENERATED_ADDRESS_RANDOM_BYTES = 20;

/** Prefix of generated addresses (visual grouping only). */
export const GENERATED_ADDRESS_PREFIX = "mq9.";

/** Returns why `s` is not a valid mail_address, or null when it is valid. */
export function mailAddressProblem(s: string): string | null {
  if (s.length === 0) return "must not be empty";
  if (s.length > MAIL_ADDRESS_MAX_CHARS) return `longer than ${MAIL_ADDRESS_MAX_CHARS} characters`;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const ok = (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x2e;
    if (!ok) {
      const ch = s[i];
      if (ch >= "A" && ch <= "Z") return `contains upper-case "${ch}" (addresses are lower case)`;
      return `contains "${ch}" (allowed: a-z, 0-9 and ".")`;
    }
  }
  if (s.startsWith(".")) return 'starts with "."';
  if (s.endsWith(".")) return 'ends with "."';
  if (s.includes("..")) return 'contains ".."';
  return null;
}

/** True when `s` is a valid mail_address. */
export function isValidMailAddress(s: string): boolean {
  return mailAddressProblem(s) === null;
}

/** Throws Mq9Error(bad_request, `invalid mail_address "X": reason`) when `s` is invalid. */
export function assertMailAddress(s: string): void {
  const problem = mailAddressProblem(s);
  if (problem) throw new Mq9Error("bad_request", `invalid mail_address "${echo(s)}": ${problem}`);
}

/**
 * Generates an unguessable mail_address: `mq9.` + 40 lower-case hex digits
 * (160 random bits from `fill`, default `crypto.getRandomValues`). The
 * result always passes `mailAddressProblem`.
 */
export function generateMailAddress(fill: (bytes: Uint8Array) => void = (b) => crypto.getRandomValues(b)): string {
  const bytes = new Uint8Array(GENERATED_ADDRESS_RANDOM_BYTES);
  fill(bytes);
  let hex = "";
  for (const b of bytes) hex += b.toString(16).padStart(2, "0");
  return GENERATED_ADDRESS_PREFIX + hex;
}
