/**
 * Defaults and limits of the mq9 agent registry (`$mq9.AI.AGENT.*`),
 * documented in docs/agents.md. Units are in the names.
 */

/** Largest REGISTER card, bytes of UTF-8 JSON. Larger → error. */
export const MAX_CARD_BYTES = 64 * 1024;

/** Largest REPORT body, bytes of UTF-8 JSON. Larger → error. */
export const MAX_REPORT_BYTES = 64 * 1024;

/**
 * Deepest nesting of objects/arrays in a REGISTER card or REPORT body.
 * Deeper → error: such JSON would overflow the stack when DISCOVER returns it.
 */
export const MAX_JSON_DEPTH = 64;

/** Longest agent `name`, characters. */
export const MAX_AGENT_NAME_CHARS = 256;

/** Longest `mailbox` value, characters. */
export const MAX_AGENT_MAILBOX_CHARS = 512;

/** Agents one tenant may register; a REGISTER of a new name beyond it is refused (429). */
export const MAX_AGENTS_PER_TENANT = 10_000;

/** DISCOVER `limit` when omitted. */
export const DEFAULT_DISCOVER_LIMIT = 20;

/** Largest DISCOVER `limit`; larger values are clamped to it. */
export const MAX_DISCOVER_LIMIT = 100;

/** Longest DISCOVER `text` / `semantic` query, characters. Longer → error. */
export const MAX_DISCOVER_QUERY_CHARS = 1_000;
