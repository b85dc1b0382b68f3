/** Helpers for the mq9 workers-pool tests: drive the real Worker through HTTP. */
import { SELF } from "cloudflare:test";
import type { Mq9Message } from "../../../wire/mq9";

export interface Mq9TestReply {
  status: number;
  body: { error: string; [k: string]: unknown };
}

/** A message of a FETCH/QUERY reply. */
export type Mq9Msg = Mq9Message;

/** Sends `nats request <subject> <payload>` through `POST /mq9/<subject>`. */
export async function mq9(
  subject: string,
  payload: unknown = "",
  headers: Record<string, string> = {},
  fetcher: (req: Request) => Promise<Response> = (req) => SELF.fetch(req),
): Promise<Mq9TestReply> {
  const body = payload instanceof Uint8Array ? payload : typeof payload === "string" ? payload : JSON.stringify(payload);
  const res = await fetcher(new Request(`http://broker/mq9/${subject}`, { method: "POST", body, headers }));
  return { status: res.status, body: (await res.json()) as Mq9TestReply["body"] };
}

let counter = 0;
/** A fresh mailbox address for one test. */
export function freshAddress(prefix = "t"): string {
  return `${prefix}.${Date.now().toString(36)}.${(counter++).toString(36)}.${Math.random().toString(36).slice(2, 8)}`;
}

/** Creates `address` (ttl seconds, default never) and returns it. */
export async function createMailbox(address = freshAddress(), ttl = 0): Promise<string> {
  const r = await mq9("$mq9.AI.MAILBOX.CREATE", { name: address, ttl });
  if (r.body.error !== "") throw new Error(`create ${address}: ${r.body.error}`);
  return address;
}

/** SEND helper returning msg_id. */
export async function send(address: string, payload: unknown, headers: Record<string, string> = {}): Promise<number> {
  const r = await mq9(`$mq9.AI.MSG.SEND.${address}`, payload, headers);
  if (r.body.error !== "") throw new Error(`send ${address}: ${r.body.error}`);
  return r.body.msg_id as number;
}

/** FETCH helper returning the messages (max_wait_ms 0 unless given). */
export async function fetchMsgs(address: string, req: Record<string, unknown> = {}): Promise<Mq9Msg[]> {
  const config = { max_wait_ms: 0, ...((req.config as object) ?? {}) };
  const r = await mq9(`$mq9.AI.MSG.FETCH.${address}`, { ...req, config });
  if (r.body.error !== "") throw new Error(`fetch ${address}: ${r.body.error}`);
  return r.body.messages as Mq9Msg[];
}

/** QUERY helper returning the messages. */
export async function query(address: string, req: Record<string, unknown> = {}): Promise<Mq9Msg[]> {
  const r = await mq9(`$mq9.AI.MSG.QUERY.${address}`, req);
  if (r.body.error !== "") throw new Error(`query ${address}: ${r.body.error}`);
  return r.body.messages as Mq9Msg[];
}

/** Decodes a reply payload to text. */
export function text(m: Mq9Msg): string {
  return atob(m.payload);
}
