/**
 * The one mq9 request handler shared by every transport (HTTP `POST
 * /mq9/<subject>` and the NATS protocol session): takes a subject, the
 * `mq9-*` headers and the payload, and returns the JSON reply of the mq9
 * spec plus an HTTP status for transports that have one.
 *
 * Placeholder until the mailboxes issue lands.
 */
import type { Env } from "../env";

/** One mq9 request as every transport sees it. */
export interface Mq9Request {
  /** Full subject, e.g. `$mq9.AI.MSG.SEND.task.001`. */
  subject: string;
  /** NATS headers / HTTP `mq9-*` headers; names lower-cased. */
  headers: Map<string, string>;
  /** NATS payload / HTTP body bytes. */
  payload: Uint8Array;
}

/** The JSON reply (always has `error`, "" on success) and its HTTP status. */
export interface Mq9Reply {
  status: number;
  body: { error: string } & Record<string, unknown>;
}

/** Runs one mq9 request for `tenant`. Never throws: failures become `error` replies. */
export async function handleMq9Request(_env: Env, _tenant: string, _req: Mq9Request): Promise<Mq9Reply> {
  return { status: 501, body: { error: "mq9 is not available on this broker yet" } };
}
