/**
 * The MCP tools of `POST /mcp` (DESIGN.md §8 "MCP"; docs/mcp.md), pure:
 * one tool per mq9 command, each with a zod input schema and a description
 * written for a model, a mapping from its arguments to ONE mq9 request
 * (subject, `mq9-*` headers, payload — what `POST /mq9/<subject>` and NATS
 * carry) and from the mq9 reply to the tool's result. The route glue
 * (worker/mcp/) registers them with the MCP SDK and runs the requests
 * through the mq9 service; nothing here does I/O.
 *
 * Payloads go in and come out as text when they are UTF-8, base64
 * otherwise; every message in a result says which (`payload_encoding`).
 */
import { z } from "zod";
import { base64ToBytes, bytesToBase64 } from "../mq9/base64";
import { MAX_DURATION_S } from "../mq9/limits";
import { PRIORITIES } from "../mq9/priority";
import type { Mq9Message } from "../mq9/messages";

/** Longest long-poll a tool call may hold, ms (an MCP call should not hang for long). */
export const MCP_MAX_WAIT_MS = 10_000;

/** Most messages one fetch/query tool call returns (a model's context is small). */
export const MCP_MAX_MESSAGES = 100;

/** One mq9 request made by a tool call. */
export interface Mq9ToolRequest {
  subject: string;
  /** `mq9-*` headers, lower-case names. */
  headers: Map<string, string>;
  payload: Uint8Array;
}

/** A tool: its MCP definition and its mq9 mapping. */
export interface Mq9Tool {
  name: string;
  title: string;
  description: string;
  /** zod raw shape of the arguments (the SDK validates them and publishes the JSON schema). */
  inputSchema: z.ZodRawShape;
  /** Tool hints for clients (MCP `annotations`). */
  annotations: { readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean; openWorldHint?: boolean };
  /**
   * The mq9 request for validated `args`.
   * @throws ToolInputError for arguments the schema cannot express (e.g. invalid base64)
   */
  request(args: Record<string, unknown>): Mq9ToolRequest;
  /** The tool's result for a successful mq9 reply (its parsed JSON, `error` = "") to the call with `args`. */
  result(reply: Record<string, unknown>, args: Record<string, unknown>, ctx: ToolContext): Record<string, unknown>;
}

/** What a tool's result may need from the request that called it. */
export interface ToolContext {
  /** The broker's origin as the caller reached it (`https://host[:port]`), for URLs in results. */
  origin: string;
}

/** Arguments that pass the schema but cannot be sent (the message is the tool error's text). */
export class ToolInputError extends Error {
  override readonly name = "ToolInputError";
}

const te = new TextEncoder();
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }); // ignoreBOM: a leading BOM stays in the text (nothing is dropped)
const json = (v: unknown) => te.encode(JSON.stringify(v));

/** A message as a tool result shows it: payload as text when it is UTF-8, else base64, and which. */
export function messageView(m: Mq9Message): Record<string, unknown> {
  const bytes = base64ToBytes(m.payload);
  let payload: string;
  let encoding: "text" | "base64" = "text";
  try {
    payload = strictUtf8.decode(bytes);
  } catch {
    payload = m.payload;
    encoding = "base64";
  }
  return {
    msg_id: m.msg_id, priority: m.priority, create_time: m.create_time, key: m.key, tags: m.tags,
    ...(m.reply_to !== undefined ? { reply_to: m.reply_to } : {}),
    ...(m.correlation_id !== undefined ? { correlation_id: m.correlation_id } : {}),
    payload, payload_encoding: encoding,
  };
}

/** `args` without undefined values. */
function defined(args: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(args)) if (v !== undefined) out[k] = v;
  return out;
}

function req(subject: string, body: unknown, headers = new Map<string, string>()): Mq9ToolRequest {
  return { subject, headers, payload: body instanceof Uint8Array ? body : json(body) };
}

function messages(reply: Record<string, unknown>): Record<string, unknown>[] {
  return (Array.isArray(reply.messages) ? (reply.messages as Mq9Message[]) : []).map(messageView);
}

// ---- shared argument schemas -------------------------------------------------------------

const mailAddress = z.string().describe(
  "The mailbox's mail_address: 1–128 characters of lower-case letters, digits and dots, starting and ending with a letter or digit (e.g. agent.translator.inbox).",
);
const groupName = z.string().min(1).max(256).describe("Consumer group name. The broker remembers, per group, which messages were acknowledged.");
const msgId = z.number().int().min(0).describe("A msg_id from mq9_fetch_messages or mq9_query_messages.");
const seconds = (what: string) => z.number().int().min(0).max(MAX_DURATION_S).describe(what);
const agentName = z.string().min(1).max(256).describe("The agent's unique name in this tenant's registry.");
const agentMailbox = z.string().max(512).describe("The agent's mailbox, as registered (a mail_address or mq9://<host>/<mail_address>).");
const limit = (def: number) => z.number().int().min(1).max(MCP_MAX_MESSAGES).default(def);

// ---- the tools ---------------------------------------------------------------------------

const createMailbox: Mq9Tool = {
  name: "mq9_create_mailbox",
  title: "Create an mq9 mailbox",
  description:
    "Create a mailbox other agents can send messages to. Give `name` to choose its mail_address, or leave it out to get an " +
    "unguessable generated one (knowing a mailbox's address is what allows sending to and reading from it, so keep generated " +
    "addresses private). The mailbox and its messages are deleted after `ttl_seconds` (default 86400 = 1 day; 0 = never). " +
    "Fails if a mailbox with that name already exists. Returns {mail_address}.",
  inputSchema: {
    name: mailAddress.optional().describe("The mail_address to create (lower-case letters, digits, dots). Omit for a generated address."),
    ttl_seconds: seconds("Lifetime in seconds; 0 = never expires. Default 86400.").optional(),
  },
  annotations: { destructiveHint: false, idempotentHint: false, openWorldHint: false },
  request: (a) => req("$mq9.AI.MAILBOX.CREATE", defined({ name: a.name, ttl: a.ttl_seconds })),
  result: (r) => ({ mail_address: r.mail_address }),
};

const sendMessage: Mq9Tool = {
  name: "mq9_send_message",
  title: "Send a message to a mailbox",
  description:
    "Send one message to a mailbox (the receiver does not need to be online; it fetches later). `payload` is the message body: " +
    "text by default, or base64 for binary data with payload_encoding \"base64\". To start a conversation, set `reply_to` to " +
    "your own mailbox and `correlation_id` to an id of the exchange; the receiver answers by sending to reply_to with the same " +
    "correlation_id. Optional: `priority` (critical > urgent > normal, delivered first), `key` (only the newest message per key " +
    "is kept), `tags` (for mq9_query_messages), `delay_seconds` (invisible until then; the result's msg_id is then -1), " +
    "`ttl_seconds` (expires after). Returns {msg_id}.",
  inputSchema: {
    mail_address: mailAddress.describe("The receiving mailbox."),
    payload: z.string().max(1_400_000).describe("The message body (at most 1 MiB once decoded)."),
    payload_encoding: z.enum(["text", "base64"]).default("text").describe('"text" (UTF-8, the default) or "base64" for binary data.'),
    priority: z.enum(PRIORITIES).optional().describe("normal (default), urgent or critical."),
    reply_to: mailAddress.optional().describe("Your mailbox, where the receiver should send its answer."),
    correlation_id: z.string().optional().describe("Id of the exchange (1–128 printable ASCII characters); answers carry the same id."),
    key: z.string().optional().describe("Compaction key: a newer message with the same key replaces this one."),
    tags: z.array(z.string()).optional().describe("Labels to filter on with mq9_query_messages."),
    delay_seconds: seconds("Deliver only after this many seconds.").optional(),
    ttl_seconds: seconds("The message expires this many seconds after sending (must exceed delay_seconds).").optional(),
  },
  annotations: { destructiveHint: false, idempotentHint: false, openWorldHint: false },
  request: (a) => {
    const h = new Map<string, string>();
    const set = (name: string, v: unknown) => v !== undefined && h.set(name, Array.isArray(v) ? v.join(",") : String(v));
    set("mq9-priority", a.priority);
    set("mq9-reply-to", a.reply_to);
    set("mq9-correlation-id", a.correlation_id);
    set("mq9-key", a.key);
    set("mq9-tags", a.tags);
    set("mq9-delay", a.delay_seconds);
    set("mq9-ttl", a.ttl_seconds);
    const text = String(a.payload);
    let body: Uint8Array;
    if (a.payload_encoding === "base64") {
      try {
        body = base64ToBytes(text);
      } catch {
        throw new ToolInputError('payload is not valid base64 (payload_encoding "base64"); send text with payload_encoding "text"');
      }
    } else {
      body = te.encode(text);
    }
    return req(`$mq9.AI.MSG.SEND.${String(a.mail_address)}`, body, h);
  },
  result: (r) => ({ msg_id: r.msg_id, ...(r.msg_id === -1 ? { note: "delayed: the message gets its msg_id when it becomes visible" } : {}) }),
};

const fetchMessages: Mq9Tool = {
  name: "mq9_fetch_messages",
  title: "Fetch messages from a mailbox",
  description:
    "Read messages from a mailbox, most urgent first (critical, urgent, normal; oldest first within each). With `group_name` " +
    "the broker remembers your position: you get the messages the group has not acknowledged yet (start with deliver " +
    "\"earliest\" to see everything that is already there), and you must acknowledge them with mq9_ack_message or you will get " +
    "them again. Without group_name nothing is remembered. `max_wait_ms` (up to 10000) waits for a message to arrive when " +
    "there is none. Each message has msg_id, priority, payload (payload_encoding says text or base64), and reply_to / " +
    "correlation_id when the sender expects an answer. Returns {messages}.",
  inputSchema: {
    mail_address: mailAddress,
    group_name: groupName.optional(),
    deliver: z.enum(["latest", "earliest", "from_time", "from_id"]).optional()
      .describe("Where a new group (or a stateless read) starts: latest (default: only new messages), earliest, from_time, from_id."),
    from_id: z.number().int().min(0).optional().describe("With deliver from_id: the first msg_id."),
    from_time: z.number().int().min(0).optional().describe("With deliver from_time: unix seconds."),
    force_deliver: z.boolean().optional().describe("Reset the group's position to `deliver`."),
    max_messages: limit(10).describe(`At most this many messages (1–${MCP_MAX_MESSAGES}, default 10).`),
    max_wait_ms: z.number().int().min(0).max(MCP_MAX_WAIT_MS).default(0).describe(`Wait up to this long for a message, ms (0–${MCP_MAX_WAIT_MS}; default 0 = answer at once).`),
  },
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  request: (a) => req(`$mq9.AI.MSG.FETCH.${String(a.mail_address)}`, defined({
    group_name: a.group_name, deliver: a.deliver, from_id: a.from_id, from_time: a.from_time, force_deliver: a.force_deliver,
    config: { num_msgs: a.max_messages, max_wait_ms: a.max_wait_ms },
  })),
  result: (r) => ({ messages: messages(r) }),
};

const ackMessage: Mq9Tool = {
  name: "mq9_ack_message",
  title: "Acknowledge a fetched message",
  description:
    "Acknowledge a message you fetched with `group_name`, so the group does not get it again. Acknowledging a message also " +
    "acknowledges the earlier messages of its priority, and acknowledging the last message of a fetched batch acknowledges the " +
    "whole batch. Returns {acknowledged: true}.",
  inputSchema: { mail_address: mailAddress, group_name: groupName, msg_id: msgId },
  annotations: { destructiveHint: false, idempotentHint: true, openWorldHint: false },
  request: (a) => req(`$mq9.AI.MSG.ACK.${String(a.mail_address)}`, { group_name: a.group_name, mail_address: a.mail_address, msg_id: a.msg_id }),
  result: () => ({ acknowledged: true }),
};

const queryMessages: Mq9Tool = {
  name: "mq9_query_messages",
  title: "Search the messages stored in a mailbox",
  description:
    "List the messages stored in a mailbox without consuming them (no group position moves). Filters combine with AND: `key`, " +
    "`tags` (messages carrying every tag), `correlation_id` (the messages of one conversation), `since` (unix seconds). Returns " +
    "the newest `limit` matches, oldest first: {messages}.",
  inputSchema: {
    mail_address: mailAddress,
    key: z.string().optional(),
    tags: z.array(z.string()).optional(),
    correlation_id: z.string().optional(),
    since: z.number().int().min(0).optional().describe("Only messages created at or after this unix time (seconds)."),
    limit: limit(20).describe(`At most this many messages (1–${MCP_MAX_MESSAGES}, default 20).`),
  },
  annotations: { readOnlyHint: true, openWorldHint: false },
  request: (a) => req(`$mq9.AI.MSG.QUERY.${String(a.mail_address)}`, defined({ key: a.key, tags: a.tags, correlation_id: a.correlation_id, since: a.since, limit: a.limit })),
  result: (r) => ({ messages: messages(r) }),
};

const deleteMessage: Mq9Tool = {
  name: "mq9_delete_message",
  title: "Delete a message",
  description: "Delete one message from a mailbox by its msg_id. Returns {deleted: true}; fails with \"message not found\" if there is no such message.",
  inputSchema: { mail_address: mailAddress, msg_id: msgId },
  annotations: { destructiveHint: true, idempotentHint: true, openWorldHint: false },
  request: (a) => req(`$mq9.AI.MSG.DELETE.${String(a.mail_address)}.${Number(a.msg_id)}`, new Uint8Array(0)),
  result: () => ({ deleted: true }),
};

const skill = z.object({
  name: z.string(),
  description: z.string().optional(),
  tags: z.array(z.string()).optional(),
  examples: z.array(z.string()).optional(),
});

const registerAgent: Mq9Tool = {
  name: "mq9_register_agent",
  title: "Register an agent",
  description:
    "Publish an agent card so other agents can find you with mq9_discover_agents: your `name`, a `description` of what you " +
    "do, the `mailbox` to send requests to (create it first with mq9_create_mailbox), and optional `skills`. Registering a " +
    "name again replaces its card. `card` may carry further A2A AgentCard fields. Returns {registered: name}.",
  inputSchema: {
    name: agentName,
    description: z.string().optional().describe("What the agent does, in plain words (searched by mq9_discover_agents)."),
    mailbox: agentMailbox.optional(),
    skills: z.array(skill).optional().describe("What the agent can do: name, description, tags, examples."),
    card: z.record(z.string(), z.unknown()).optional().describe("Further AgentCard fields (url, version, capabilities, …), stored as given."),
  },
  annotations: { destructiveHint: false, idempotentHint: true, openWorldHint: false },
  request: (a) => req("$mq9.AI.AGENT.REGISTER", { ...((a.card as object | undefined) ?? {}), ...defined({ name: a.name, description: a.description, mailbox: a.mailbox, skills: a.skills }) }),
  result: (_r, a) => ({ registered: a.name }),
};

const unregisterAgent: Mq9Tool = {
  name: "mq9_unregister_agent",
  title: "Unregister an agent",
  description: "Remove an agent's card from the registry, by `name` or by `mailbox`. Returns {removed}: false when it was not registered (not an error).",
  inputSchema: { name: agentName.optional(), mailbox: agentMailbox.optional() },
  annotations: { destructiveHint: true, idempotentHint: true, openWorldHint: false },
  request: (a) => req("$mq9.AI.AGENT.UNREGISTER", defined({ name: a.name, mailbox: a.mailbox })),
  result: (r) => ({ removed: r.removed === true }),
};

const reportStatus: Mq9Tool = {
  name: "mq9_report_status",
  title: "Report an agent's status",
  description:
    "Tell other agents how you are doing: `status` (e.g. \"idle\", \"busy\", \"offline\") and optional `details`, for the agent " +
    "named by `name` or `mailbox` (it must be registered). mq9_discover_agents shows the latest report under `_mq9.report`. " +
    "Returns {reported: true}.",
  inputSchema: {
    name: agentName.optional(),
    mailbox: agentMailbox.optional(),
    status: z.string().describe("The status, e.g. idle, busy, offline."),
    details: z.record(z.string(), z.unknown()).optional().describe("Further report fields, stored as given (e.g. load, queue_length)."),
  },
  annotations: { destructiveHint: false, idempotentHint: true, openWorldHint: false },
  request: (a) => req("$mq9.AI.AGENT.REPORT", { ...((a.details as object | undefined) ?? {}), ...defined({ name: a.name, mailbox: a.mailbox, status: a.status }) }),
  result: () => ({ reported: true }),
};

const discoverAgents: Mq9Tool = {
  name: "mq9_discover_agents",
  title: "Find agents",
  description:
    "Find registered agents: `semantic` is a natural-language description of what you need (meaning-based search), `text` " +
    "searches keywords in names, descriptions and skills; with neither, every agent is listed. Each result is the agent's " +
    "card (name, description, mailbox, skills, …) plus `_mq9.report` with its latest status. Send requests to a card's " +
    "mailbox with mq9_send_message. Returns {agents}.",
  inputSchema: {
    semantic: z.string().max(1000).optional(),
    text: z.string().max(1000).optional(),
    limit: z.number().int().min(1).max(100).default(20).describe("Results per page (1–100, default 20)."),
    page: z.number().int().min(1).default(1).describe("1-based page."),
  },
  annotations: { readOnlyHint: true, openWorldHint: false },
  request: (a) => req("$mq9.AI.AGENT.DISCOVER", defined({ semantic: a.semantic, text: a.text, limit: a.limit, page: a.page })),
  result: (r) => ({ agents: Array.isArray(r.agents) ? r.agents : [] }),
};

/** The tools of the mq9 commands, in the order tools/list gives them (the A2A inbox tools follow: MCP_TOOLS). */
export const MQ9_TOOLS: readonly Mq9Tool[] = [
  createMailbox, sendMessage, fetchMessages, ackMessage, queryMessages, deleteMessage,
  registerAgent, unregisterAgent, reportStatus, discoverAgents,
];

/** What the server tells a model about mq9 (MCP `instructions`). */
export const MQ9_INSTRUCTIONS =
  "mq9 mailboxes for asynchronous messages between agents. Create a mailbox (mq9_create_mailbox), register yourself with " +
  "its address (mq9_register_agent), find other agents (mq9_discover_agents) and send to their mailbox (mq9_send_message, " +
  "with reply_to = your mailbox and a correlation_id to get an answer). Read your mailbox with mq9_fetch_messages and a " +
  "group_name, and acknowledge what you handled (mq9_ack_message). Answer a message by sending to its reply_to with its " +
  "correlation_id. To receive an A2A agent server's task updates without a public endpoint, make a mailbox its push inbox " +
  "(mq9_create_a2a_receiver) and read them with mq9_list_a2a_updates. Errors are returned as tool errors with the broker's explanation.";
