/**
 * JSON bodies of the `$mq9.AI.AGENT.*` subjects (mq9 spec: REGISTER,
 * UNREGISTER, REPORT, DISCOVER), validated with zod and normalized. Pure:
 * shared by the Worker (decode before calling the AgentRegistry object) and
 * the unit tests. Every failure is an Mq9Error(bad_request) whose message
 * names the offending field. Behaviour is documented in docs/agents.md.
 */
import { z } from "zod";
import {
  DEFAULT_DISCOVER_LIMIT,
  MAX_AGENT_MAILBOX_CHARS,
  MAX_AGENT_NAME_CHARS,
  MAX_CARD_BYTES,
  MAX_DISCOVER_LIMIT,
  MAX_DISCOVER_QUERY_CHARS,
  MAX_AGENTS_PER_TENANT,
  MAX_JSON_DEPTH,
  MAX_REPORT_BYTES,
} from "./agent-limits";
import { Mq9Error } from "./errors";
import { parseJsonBody, wholeNumber } from "./schemas";

/** Card key the broker adds to DISCOVER results (latest REPORT); cards may not carry it. */
export const RESERVED_CARD_KEY = "_mq9";

const text = z.string();
const textList = z.array(z.string());

/** One A2A AgentSkill: only the fields the registry indexes are checked. */
const skillSchema = z.looseObject({
  id: text.nullish(),
  name: text.nullish(),
  description: text.nullish(),
  tags: textList.nullish(),
  examples: textList.nullish(),
});

/** An A2A AgentCard as REGISTER accepts it; unknown fields are kept verbatim. */
export const agentCardSchema = z.looseObject({
  name: z
    .string({ error: "name is required (a non-empty string)" })
    .max(MAX_AGENT_NAME_CHARS)
    .refine((s) => s.trim() !== "", "name must not be empty"),
  description: text.nullish(),
  mailbox: text.max(MAX_AGENT_MAILBOX_CHARS).nullish(),
  skills: z.array(skillSchema).nullish(),
});

/** The searchable parts of a card, extracted once at REGISTER. */
export interface AgentCardFields {
  name: string;
  /** Mailbox as written in the card, or null. */
  mailbox: string | null;
  description: string;
  /** Every skill's name, description, tags and examples, one per line. */
  skillsText: string;
}

/** A validated REGISTER: the raw JSON text (stored as is) and its fields. */
export interface RegisterSpec {
  /** The card exactly as received (UTF-8 decoded). */
  cardJson: string;
  fields: AgentCardFields;
  /**
   * Set for a caller whose token scopes limit `agents.register` to some
   * mailboxes (objects/mq9/agents.ts): an agent already registered under
   * the same name is replaced only while its mailbox key is this one (null:
   * no mailbox); else the registry answers 403 naming the mailbox it is
   * registered with (`registeredMailbox`), and nothing changes. Undefined:
   * replace whatever is registered (docs/agents.md).
   */
  replaceOnlyMailboxKey?: string | null;
}

/** Identifies one agent: by `name`, else by `mailbox`. */
export interface AgentSelector {
  name: string | null;
  mailbox: string | null;
}

/** A validated REPORT: who reports, and the body stored verbatim. */
export interface ReportSpec {
  selector: AgentSelector;
  /** The REPORT body exactly as received. */
  bodyJson: string;
}

/** A normalized DISCOVER. `mode` follows the spec: semantic wins over text; neither = list all. */
export interface DiscoverSpec {
  mode: "semantic" | "text" | "all";
  /** The query of the chosen mode ("" for `all`). */
  query: string;
  /** 1..MAX_DISCOVER_LIMIT results per page. */
  limit: number;
  /** 1-based page. */
  page: number;
}

/**
 * Parses a REGISTER body: a JSON object with a non-empty string `name`;
 * `description` string, `mailbox` string, `skills` array of objects whose
 * `name`/`description` are strings and `tags`/`examples` string arrays (all
 * optional, null = absent). Unknown fields are allowed and kept. The key
 * `_mq9` is reserved. Bodies over MAX_CARD_BYTES are refused.
 */
export function parseRegisterRequest(payload: Uint8Array): RegisterSpec {
  if (payload.byteLength > MAX_CARD_BYTES) {
    throw new Mq9Error("bad_request", `agent card of ${payload.byteLength} bytes exceeds the limit of ${MAX_CARD_BYTES} bytes`);
  }
  const card = parseObjectBody(payload, agentCardSchema, "agent card");
  assertJsonDepth(payload, "agent card");
  if (Object.hasOwn(card, RESERVED_CARD_KEY)) {
    throw new Mq9Error("bad_request", `invalid agent card: field ${RESERVED_CARD_KEY} is reserved for the broker`);
  }
  const skills = card.skills ?? [];
  const skillsText = skills
    .map((s) => [s.name, s.description, ...(s.tags ?? []), ...(s.examples ?? [])].filter((x) => x).join("\n"))
    .filter((x) => x)
    .join("\n");
  return {
    cardJson: new TextDecoder().decode(payload),
    fields: { name: card.name, mailbox: card.mailbox?.trim() ? card.mailbox : null, description: card.description ?? "", skillsText },
  };
}

const selectorSchema = z.looseObject({
  name: text.min(1, "must not be empty").max(MAX_AGENT_NAME_CHARS).nullish(),
  mailbox: text.min(1, "must not be empty").max(MAX_AGENT_MAILBOX_CHARS).nullish(),
});

/** Parses an UNREGISTER body: `{"name"}` and/or `{"mailbox"}`, at least one. */
export function parseUnregisterRequest(payload: Uint8Array): AgentSelector {
  return selectorOf(parseObjectBody(payload, selectorSchema, "request body"), "UNREGISTER");
}

/**
 * Parses a REPORT body: any JSON object (its status fields belong to the
 * upper protocol) that names the agent by `name` and/or `mailbox`. Bodies
 * over MAX_REPORT_BYTES are refused.
 */
export function parseReportRequest(payload: Uint8Array): ReportSpec {
  if (payload.byteLength > MAX_REPORT_BYTES) {
    throw new Mq9Error("bad_request", `report of ${payload.byteLength} bytes exceeds the limit of ${MAX_REPORT_BYTES} bytes`);
  }
  const body = parseObjectBody(payload, selectorSchema, "request body");
  assertJsonDepth(payload, "report");
  return { selector: selectorOf(body, "REPORT"), bodyJson: new TextDecoder().decode(payload) };
}

const discoverSchema = z.object({
  text: text.max(MAX_DISCOVER_QUERY_CHARS).nullish(),
  semantic: text.max(MAX_DISCOVER_QUERY_CHARS).nullish(),
  limit: wholeNumber(1, Infinity).nullish(),
  page: wholeNumber(1, Infinity).nullish(),
});

/**
 * Parses a DISCOVER body (empty = `{}`). `semantic` wins over `text`; a
 * blank (all-whitespace) query counts as absent. `limit` defaults to 20
 * and is clamped to MAX_DISCOVER_LIMIT; `page` defaults to 1 and is clamped
 * to MAX_AGENTS_PER_TENANT + 1 (always past the last agent: an empty page).
 */
export function parseDiscoverRequest(payload: Uint8Array): DiscoverSpec {
  const b = parseJsonBody(payload, discoverSchema);
  const semantic = b.semantic?.trim() ?? "";
  const query = b.text?.trim() ?? "";
  const limit = Math.min(b.limit ?? DEFAULT_DISCOVER_LIMIT, MAX_DISCOVER_LIMIT);
  const page = Math.min(b.page ?? 1, MAX_AGENTS_PER_TENANT + 1);
  if (semantic !== "") return { mode: "semantic", query: semantic, limit, page };
  if (query !== "") return { mode: "text", query, limit, page };
  return { mode: "all", query: "", limit, page };
}

/** The mail_address part of a mailbox: `mq9://<host>/<address>` → `<address>`; anything else as is. */
export function mailboxKey(mailbox: string): string {
  const m = /^mq9:\/\/[^/]*\/(.+)$/i.exec(mailbox.trim());
  return m ? m[1] : mailbox.trim();
}

/**
 * Deepest nesting of objects and arrays in JSON text (brackets inside
 * strings do not count). Meaningful for valid JSON only.
 */
export function jsonNestingDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) max = Math.max(max, ++depth);
    else if (c === 0x7d || c === 0x5d) depth--;
  }
  return max;
}

/** Refuses JSON nested deeper than MAX_JSON_DEPTH (stored bodies are parsed and serialized again by DISCOVER). */
function assertJsonDepth(payload: Uint8Array, what: string): void {
  if (jsonNestingDepth(new TextDecoder().decode(payload)) > MAX_JSON_DEPTH) {
    throw new Mq9Error("bad_request", `${what} nests objects/arrays deeper than ${MAX_JSON_DEPTH} levels`);
  }
}

/** parseJsonBody, but the body must be a JSON object (not empty, not an array). */
function parseObjectBody<T extends z.ZodType>(payload: Uint8Array, schema: T, what: string): z.infer<T> {
  const text = new TextDecoder().decode(payload).trim();
  if (text === "") throw new Mq9Error("bad_request", `${what} is empty: expected a JSON object`);
  if (!text.startsWith("{")) {
    try {
      JSON.parse(text);
    } catch (e) {
      throw new Mq9Error("bad_request", `${what} is not valid JSON: ${(e as Error).message}`);
    }
    throw new Mq9Error("bad_request", `${what} must be a JSON object`);
  }
  return parseJsonBody(payload, schema);
}

function selectorOf(b: { name?: string | null; mailbox?: string | null }, verb: string): AgentSelector {
  const name = b.name ?? null;
  const mailbox = b.mailbox ?? null;
  if (name === null && mailbox === null) {
    throw new Mq9Error("bad_request", `${verb} needs the agent's name or mailbox`);
  }
  return { name, mailbox };
}
