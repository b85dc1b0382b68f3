/**
 * Topic retention settings (docs/protocol.md "Topic retention"), pure: the
 * deployment defaults from Worker vars, the per-topic overrides the
 * TopicRegistry stores, and how the two resolve into the settings in force.
 *
 * | var | default | meaning |
 * |---|---|---|
 * | MORTAR_RETENTION_MS | 604800000 (7 days) | records older than this are deleted (whole segments); 0 = keep forever |
 * | MORTAR_RETENTION_BYTES | 8589934592 (8 GiB) | per partition: keys + values kept at most; 0 = no limit (a partition may then grow until its object's 10 GB storage cap refuses writes) |
 * | MORTAR_RETENTION_MESSAGES | 0 | per partition: records kept at most; 0 = no limit |
 * | MORTAR_RETENTION_DISCARD | old | what a full partition does: `old` deletes the oldest segments, `new` refuses PUBs (PARTITION_FULL) |
 *
 * A var that is empty, not a whole number ≥ 0 (int-var.ts; above 2^53 − 1
 * it is capped there) or not old/new means its default. Topics that never set a field follow the var (a change of the
 * var applies to them after a redeploy); a `.dlq` twin that never set a
 * field follows its source topic.
 */
import { DEFAULT_RETENTION_BYTES, DEFAULT_RETENTION_MS, Discard, RetentionFields } from "../../wire/mortar/constants";
import type { DeclareRetention, RetentionValues } from "../../wire/mortar/frames";
import { nonNegativeInt } from "./int-var";

/** What a full partition does. */
export type DiscardPolicy = "old" | "new";

/** Settings in force for one topic. Limits are per partition; 0 = unlimited. */
export interface Retention {
  /** Max record age, ms. */
  ms: number;
  /** Max keys + values per partition, bytes. */
  bytes: number;
  /** Max records per partition. */
  messages: number;
  discard: DiscardPolicy;
}

/** Stored per-topic settings: null = not set (a topic follows the deployment default, a twin its source). */
export interface RetentionOverrides {
  ms: number | null;
  bytes: number | null;
  messages: number | null;
  discard: DiscardPolicy | null;
}

/** Nothing set. */
export const NO_OVERRIDES: RetentionOverrides = Object.freeze({ ms: null, bytes: null, messages: null, discard: null });

/** The retention-related vars (a subset of Env, so that this module stays free of bindings). */
export interface RetentionVars {
  MORTAR_RETENTION_MS?: string;
  MORTAR_RETENTION_BYTES?: string;
  MORTAR_RETENTION_MESSAGES?: string;
  MORTAR_RETENTION_DISCARD?: string;
}

/** The deployment's defaults (see the module comment). */
export function retentionDefaults(env: RetentionVars): Retention {
  const d = env.MORTAR_RETENTION_DISCARD?.trim().toLowerCase();
  return {
    ms: nonNegativeInt(env.MORTAR_RETENTION_MS, DEFAULT_RETENTION_MS),
    bytes: nonNegativeInt(env.MORTAR_RETENTION_BYTES, DEFAULT_RETENTION_BYTES),
    messages: nonNegativeInt(env.MORTAR_RETENTION_MESSAGES, 0),
    discard: d === "new" ? "new" : "old",
  };
}

/**
 * Each field of `own` that is set, else the field of `fallback`: with the
 * deployment defaults as `fallback`, the settings in force; with a source
 * topic's overrides, a twin's overrides layered over its source's (fields
 * neither set stay null).
 */
export function resolveRetention(own: RetentionOverrides, fallback: Retention): Retention;
export function resolveRetention(own: RetentionOverrides, fallback: RetentionOverrides): RetentionOverrides;
export function resolveRetention(own: RetentionOverrides, fallback: RetentionOverrides): RetentionOverrides {
  return {
    ms: own.ms ?? fallback.ms,
    bytes: own.bytes ?? fallback.bytes,
    messages: own.messages ?? fallback.messages,
    discard: own.discard ?? fallback.discard,
  };
}

/** True when the two have the same value (or both none) in every field. */
export function sameOverrides(a: RetentionOverrides, b: RetentionOverrides): boolean {
  return a.ms === b.ms && a.bytes === b.bytes && a.messages === b.messages && a.discard === b.discard;
}

/** The wire form of settings in force (the DECLARE OK retention tail). */
export function retentionToWire(r: Retention): RetentionValues {
  return { retentionMs: BigInt(r.ms), retentionBytes: BigInt(r.bytes), retentionMessages: BigInt(r.messages), discard: r.discard === "new" ? Discard.NEW : Discard.OLD };
}

/** Whether `r` limits anything at all (retention by age, bytes or count). */
export function limitsAnything(r: Retention): boolean {
  return r.ms > 0 || r.bytes > 0 || r.messages > 0;
}

/**
 * The fields a DECLARE retention tail sets (RetentionFields bits), as
 * numbers. The tail was checked (wire/mortar/validate.ts retentionTailError:
 * values ≤ 2^53 − 1, discard 0/1).
 */
export function patchFromWire(t: DeclareRetention): Partial<RetentionOverrides> {
  const p: Partial<RetentionOverrides> = {};
  if (t.fields & RetentionFields.MS) p.ms = Number(t.retentionMs);
  if (t.fields & RetentionFields.BYTES) p.bytes = Number(t.retentionBytes);
  if (t.fields & RetentionFields.MESSAGES) p.messages = Number(t.retentionMessages);
  if (t.fields & RetentionFields.DISCARD) p.discard = t.discard === Discard.NEW ? "new" : "old";
  return p;
}

/** `own` with the fields of `patch` replaced. */
export function applyPatch(own: RetentionOverrides, patch: Partial<RetentionOverrides>): RetentionOverrides {
  return { ...own, ...patch };
}
