/**
 * JSON request bodies of the mailbox subjects (mq9 spec request tables),
 * validated with zod and normalized (defaults applied, limits clamped).
 * Unknown fields are ignored; `null` counts as absent for optional fields.
 */
import { z } from "zod";
import { Mq9Error } from "./errors";
import {
  DEFAULT_MAX_WAIT_MS,
  DEFAULT_NUM_MSGS,
  MAX_BATCH_MSGS,
  MAX_DURATION_S,
  MAX_GROUP_NAME_CHARS,
  MAX_KEY_CHARS,
  MAX_WAIT_MS,
} from "./limits";
import { parseTags } from "./headers";
import { parseCorrelationId } from "./conversation";

/**
 * A whole JSON number in [min, max] (any size JSON can carry when `max` is
 * Infinity). One error that names the real range, e.g. `must be a whole
 * number of seconds from 0 to 315360000`, instead of zod's pair of issues
 * whose first one is the float-safety bound 9007199254740991.
 */
export function wholeNumber(min: number, max: number, unit = "") {
  const range = max === Infinity ? `≥ ${min}` : `from ${min} to ${max}`;
  const message = `must be a whole number${unit} ${range}`;
  return z.number({ error: message }).refine((n) => Number.isInteger(n) && n >= min && n <= max, { message });
}

/** msg_ids and unix times: exact integers only (a larger JSON number is not one). */
export const msgIdSchema = wholeNumber(0, Number.MAX_SAFE_INTEGER);
export const unixSecondsSchema = wholeNumber(0, Number.MAX_SAFE_INTEGER, " of unix seconds");
export const groupNameSchema = z.string().min(1, "must not be empty").max(MAX_GROUP_NAME_CHARS);
/** FETCH / PUSH.CREATE start policy names. */
export const deliverSchema = z.enum(["latest", "earliest", "from_time", "from_id"]);

/** `$mq9.AI.MAILBOX.CREATE` body: `{name?, ttl?}` (ttl seconds, 0 = never, at most MAX_DURATION_S). */
export const createRequestSchema = z.object({
  name: z.string().nullish(),
  ttl: wholeNumber(0, MAX_DURATION_S, " of seconds").nullish(),
});

/** `$mq9.AI.MSG.FETCH.*` body. */
export const fetchRequestSchema = z.object({
  group_name: groupNameSchema.nullish(),
  deliver: deliverSchema.nullish(),
  from_time: unixSecondsSchema.nullish(),
  from_id: msgIdSchema.nullish(),
  force_deliver: z.boolean().nullish(),
  config: z
    .object({
      // clamped to MAX_BATCH_MSGS / MAX_WAIT_MS by parseFetchRequest: no upper bound here
      num_msgs: wholeNumber(1, Infinity).nullish(),
      max_wait_ms: wholeNumber(0, Infinity, " of ms").nullish(),
    })
    .nullish(),
});

/** `$mq9.AI.MSG.ACK.*` body: all three fields required. */
export const ackRequestSchema = z.object({
  group_name: groupNameSchema,
  mail_address: z.string(),
  msg_id: msgIdSchema,
});

/**
 * `$mq9.AI.MSG.QUERY.*` body. `tags` is a list or a comma-separated string;
 * `correlation_id` (conversation extension) is checked by parseQueryRequest.
 */
export const queryRequestSchema = z.object({
  key: z.string().min(1).max(MAX_KEY_CHARS).nullish(),
  limit: wholeNumber(1, Infinity).nullish(), // clamped to MAX_BATCH_MSGS
  since: unixSecondsSchema.nullish(),
  tags: z.union([z.array(z.string()), z.string()]).nullish(),
  correlation_id: z.string().nullish(),
});

/** Where a FETCH starts when no group position applies. */
export type DeliverPolicy =
  | { kind: "latest" }
  | { kind: "earliest" }
  | { kind: "from_time"; fromTimeSec: number }
  | { kind: "from_id"; fromId: number };

/** A normalized FETCH request. */
export interface FetchSpec {
  /** Consumer group (stateful) or null (stateless, nothing recorded). */
  group: string | null;
  deliver: DeliverPolicy;
  /** Reset the group's position to `deliver` (stateful only). */
  forceDeliver: boolean;
  /** 1..MAX_BATCH_MSGS messages per reply. */
  numMsgs: number;
  /** Long-poll wait, 0..MAX_WAIT_MS ms (0 = return at once). */
  maxWaitMs: number;
}

/** A normalized QUERY request; filters combine with AND. */
export interface QuerySpec {
  key: string | null;
  /** 1..MAX_BATCH_MSGS newest matches. */
  limit: number;
  /** create_time ≥ since (unix seconds), or null. */
  sinceSec: number | null;
  /** Every tag must be present on the message. */
  tags: string[];
  /** Only messages sent with this `mq9-correlation-id`, or null (conversation extension). */
  correlationId: string | null;
}

/** A normalized CREATE request. */
export interface CreateSpec {
  name: string | null;
  ttlSec: number | null;
}

/** A normalized ACK request. */
export interface AckSpec {
  group: string;
  mailAddress: string;
  msgId: number;
}

/**
 * Decodes a JSON body: empty or all-whitespace payload = `{}`. Throws
 * Mq9Error(bad_request) for invalid UTF-8/JSON or a schema violation,
 * naming the offending field.
 */
export function parseJsonBody<T extends z.ZodType>(payload: Uint8Array, schema: T): z.infer<T> {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(payload);
  } catch {
    throw new Mq9Error("bad_request", "request body is not valid UTF-8 JSON");
  }
  let value: unknown = {};
  if (text.trim() !== "") {
    try {
      value = JSON.parse(text);
    } catch (e) {
      throw new Mq9Error("bad_request", `request body is not valid JSON: ${(e as Error).message}`);
    }
  }
  const r = schema.safeParse(value);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    const where = issue.path.length ? `field ${issue.path.join(".")}` : "body";
    throw new Mq9Error("bad_request", `invalid request ${where}: ${issueText(issue, value)}`);
  }
  return r.data;
}

/** What a wrong type must be instead, in the words of the errors (zod's `expected`). */
const EXPECTED: Record<string, string> = {
  string: "a string", number: "a number", int: "a whole number", boolean: "true or false", object: "a JSON object", array: "a list",
};

/**
 * The text of the first schema issue: a field absent from `value` is
 * `required` (with the field's own rule in brackets when it has one), a
 * wrong type with zod's default wording (`Invalid input: expected string,
 * received undefined`) is `must be a string`; a field a strict schema does
 * not know (PUSH.CREATE) is `unknown field "x"`; every other message is the
 * schema's own.
 */
function issueText(issue: z.core.$ZodIssue, value: unknown): string {
  const zodDefault = issue.message.startsWith("Invalid input");
  if (issue.code === "unrecognized_keys") return `unknown field${issue.keys.length > 1 ? "s" : ""} ${issue.keys.map((k) => JSON.stringify(k)).join(", ")}`;
  if (issue.code !== "invalid_type") return issue.message;
  let at: unknown = value;
  for (const key of issue.path) at = at !== null && typeof at === "object" ? (at as Record<PropertyKey, unknown>)[key] : undefined;
  if (issue.path.length > 0 && at === undefined) return zodDefault ? "required" : `required (${issue.message})`;
  return zodDefault ? `must be ${EXPECTED[issue.expected] ?? issue.expected}` : issue.message;
}

/** The body of a request that takes no fields (PUSH.LIST, MSG.DELETE): `{}` or empty; unknown fields are ignored, as in every request body. */
const noFieldsSchema = z.object({});

/**
 * Checks the body of a request that takes no fields (`$mq9.AI.PUSH.LIST.*`,
 * `$mq9.AI.MSG.DELETE.*.*`): empty or a JSON object. Throws
 * Mq9Error(bad_request) for anything else (not UTF-8/JSON, not an object).
 */
export function parseNoFieldsRequest(payload: Uint8Array): void {
  parseJsonBody(payload, noFieldsSchema);
}

/** Parses a CREATE body. */
export function parseCreateRequest(payload: Uint8Array): CreateSpec {
  const b = parseJsonBody(payload, createRequestSchema);
  return { name: b.name ?? null, ttlSec: b.ttl ?? null };
}

/**
 * Parses a FETCH body: `deliver` defaults to latest; `from_time`/`from_id`
 * are required by their policies; `num_msgs` defaults to 100 and is clamped
 * to 1000; `max_wait_ms` defaults to 500 and is clamped to 30000.
 */
export function parseFetchRequest(payload: Uint8Array): FetchSpec {
  const b = parseJsonBody(payload, fetchRequestSchema);
  return {
    group: b.group_name ?? null,
    deliver: deliverPolicy(b),
    forceDeliver: b.force_deliver ?? false,
    numMsgs: Math.min(b.config?.num_msgs ?? DEFAULT_NUM_MSGS, MAX_BATCH_MSGS),
    maxWaitMs: Math.min(b.config?.max_wait_ms ?? DEFAULT_MAX_WAIT_MS, MAX_WAIT_MS),
  };
}

/**
 * The start policy of the `deliver`, `from_time` and `from_id` fields
 * (FETCH, PUSH.CREATE): `deliver` defaults to latest; `from_time` /
 * `from_id` are required by their policies (Mq9Error bad_request).
 */
export function deliverPolicy(b: {
  deliver?: "latest" | "earliest" | "from_time" | "from_id" | null;
  from_time?: number | null;
  from_id?: number | null;
}): DeliverPolicy {
  const kind = b.deliver ?? "latest";
  if (kind === "from_time") {
    if (b.from_time == null) throw new Mq9Error("bad_request", 'deliver "from_time" needs the from_time field (unix seconds)');
    return { kind, fromTimeSec: b.from_time };
  }
  if (kind === "from_id") {
    if (b.from_id == null) throw new Mq9Error("bad_request", 'deliver "from_id" needs the from_id field');
    return { kind, fromId: b.from_id };
  }
  return { kind };
}

/** Parses an ACK body. */
export function parseAckRequest(payload: Uint8Array): AckSpec {
  const b = parseJsonBody(payload, ackRequestSchema);
  return { group: b.group_name, mailAddress: b.mail_address, msgId: b.msg_id };
}

/** Parses a QUERY body: `limit` defaults to (and is clamped at) 1000. */
export function parseQueryRequest(payload: Uint8Array): QuerySpec {
  const b = parseJsonBody(payload, queryRequestSchema);
  const tags = b.tags == null ? [] : parseTags(Array.isArray(b.tags) ? b.tags.join(",") : b.tags);
  return {
    key: b.key ?? null,
    limit: Math.min(b.limit ?? MAX_BATCH_MSGS, MAX_BATCH_MSGS),
    sinceSec: b.since ?? null,
    tags,
    correlationId: b.correlation_id == null ? null : parseCorrelationId(b.correlation_id, "request field correlation_id"),
  };
}
