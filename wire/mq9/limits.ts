/**
 * Defaults and limits of the mq9 implementation (documented in docs/mq9.md).
 * Units are in the names: _BYTES, _MS, _S.
 */

/** Largest SEND payload (and any request body), bytes. Larger → HTTP 413. */
export const MAX_PAYLOAD_BYTES = 1024 * 1024;

/** Mailbox TTL when CREATE omits `ttl`, seconds (1 day). `ttl: 0` = never expires. */
export const DEFAULT_MAILBOX_TTL_S = 86_400;

/** Largest accepted mailbox TTL, `mq9-ttl` and `mq9-delay`, seconds (10 years). */
export const MAX_DURATION_S = 315_360_000;

/** FETCH `config.num_msgs` when omitted. */
export const DEFAULT_NUM_MSGS = 100;

/** Largest FETCH `config.num_msgs` / QUERY `limit`; larger values are clamped. */
export const MAX_BATCH_MSGS = 1000;

/** FETCH `config.max_wait_ms` when omitted, ms. */
export const DEFAULT_MAX_WAIT_MS = 500;

/** Largest FETCH long-poll wait, ms; larger `max_wait_ms` values are clamped. */
export const MAX_WAIT_MS = 30_000;

/**
 * Payload bytes one FETCH/QUERY reply carries at most (before base64). The
 * first message is always included, so one large message never stalls.
 */
export const MAX_REPLY_PAYLOAD_BYTES = 4 * 1024 * 1024;

/** Longest `mq9-key`, characters. */
export const MAX_KEY_CHARS = 512;

/** Most tags per message, and longest tag, characters. */
export const MAX_TAGS = 32;
export const MAX_TAG_CHARS = 128;

/** Longest FETCH/ACK `group_name`, characters. */
export const MAX_GROUP_NAME_CHARS = 256;

/**
 * Consumer groups one mailbox stores (each new `group_name` creates a
 * stored position that lives as long as the mailbox). A FETCH with a new
 * group_name beyond it → HTTP 429.
 */
export const MAX_GROUPS_PER_MAILBOX = 1000;

/** Long-poll FETCH requests one mailbox holds at once; more → HTTP 429. */
export const MAX_PENDING_FETCHES = 1000;
