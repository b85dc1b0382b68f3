/**
 * The MCP tools for A2A push inboxes (docs/a2a.md, docs/mcp.md), pure like
 * the mq9 tools beside them (tools.ts): create a mailbox's A2A receiver
 * (`$mq9.AI.A2A.RECEIVER.CREATE`) and list the task updates stored in it
 * (`$mq9.AI.MSG.QUERY` with tag `a2a`, optionally of one task).
 */
import { z } from "zod";
import { base64ToBytes } from "../mq9/base64";
import type { Mq9Message } from "../mq9/messages";
import type { Mq9Tool, Mq9ToolRequest } from "./tools";

const te = new TextEncoder();
const td = new TextDecoder();

const mailAddress = z.string().describe("The mailbox's mail_address (lower-case letters, digits and dots).");

function req(subject: string, body: unknown): Mq9ToolRequest {
  return { subject, headers: new Map(), payload: body === null ? new Uint8Array(0) : te.encode(JSON.stringify(body)) };
}

/**
 * One stored A2A notification as the tool shows it: its msg_id, task id
 * (the message's correlation_id), kind (from tag `a2a.<kind>`), arrival
 * time (unix seconds) and the notification body parsed (the A2A
 * `StreamResponse` as the server sent it; its text when it is not JSON).
 */
export function a2aUpdateView(m: Mq9Message): Record<string, unknown> {
  const text = td.decode(base64ToBytes(m.payload));
  let update: unknown;
  try {
    update = JSON.parse(text);
  } catch {
    update = text;
  }
  const kind = m.tags.find((t) => t.startsWith("a2a."))?.slice(4) ?? "";
  return { msg_id: m.msg_id, task_id: m.correlation_id ?? null, kind, create_time: m.create_time, update };
}

const createReceiver: Mq9Tool = {
  name: "mq9_create_a2a_receiver",
  title: "Make a mailbox an A2A push-notification inbox",
  description:
    "Let an A2A agent server deliver task updates (push notifications) into one of your mailboxes, so you can read them later " +
    "even though you have no public HTTPS endpoint. Returns {url, token}: give them to the A2A server as the task's " +
    "push-notification config (PushNotificationConfig url and token). Calling it again replaces the token (the old one stops " +
    "working). Read the updates with mq9_list_a2a_updates (or mq9_fetch_messages: each update is a message tagged a2a).",
  inputSchema: { mail_address: mailAddress.describe("Your mailbox that should receive the A2A task updates (create it first with mq9_create_mailbox).") },
  annotations: { destructiveHint: false, idempotentHint: false, openWorldHint: false },
  request: (a) => req(`$mq9.AI.A2A.RECEIVER.CREATE.${String(a.mail_address)}`, null),
  result: (r, _a, ctx) => ({ url: `${ctx.origin}${String(r.path)}`, token: r.token }),
};

const listUpdates: Mq9Tool = {
  name: "mq9_list_a2a_updates",
  title: "List A2A task updates in a mailbox",
  description:
    "List the A2A push notifications (task status updates, artifact updates, tasks) an A2A server delivered to your mailbox " +
    "(see mq9_create_a2a_receiver), oldest first, without consuming them. Give `task_id` for the updates of one task. Each " +
    "update has msg_id, task_id, kind (task, status-update, artifact-update or message), create_time and `update`, the " +
    "notification as the server sent it. Returns {updates}.",
  inputSchema: {
    mail_address: mailAddress,
    task_id: z.string().optional().describe("Only the updates of this A2A task."),
    limit: z.number().int().min(1).max(100).default(50).describe("At most this many (the newest; 1–100, default 50)."),
  },
  annotations: { readOnlyHint: true, openWorldHint: false },
  request: (a) => req(`$mq9.AI.MSG.QUERY.${String(a.mail_address)}`, {
    tags: ["a2a"], ...(a.task_id !== undefined ? { correlation_id: a.task_id } : {}), limit: a.limit,
  }),
  result: (r) => ({ updates: (Array.isArray(r.messages) ? (r.messages as Mq9Message[]) : []).map(a2aUpdateView) }),
};

/** The A2A inbox tools, in the order tools/list gives them (after the mq9 tools). */
export const A2A_TOOLS: readonly Mq9Tool[] = [createReceiver, listUpdates];
