/**
 * `$mq9.AI.A2A.RECEIVER.CREATE/DELETE.<mail_address>` (A2A inbox, docs/a2a.md),
 * through handleMq9Request (dispatch.ts). CREATE makes a new receiver token
 * for the mailbox (replacing any earlier one), stores its SHA-256 in the
 * Mailbox and answers `{error:"", token, path}` — the token is shown once.
 * DELETE removes it (pushes are then refused 401).
 */
import { newReceiverToken, parseNoFieldsRequest, sha256Hex, type Mq9Subject } from "../../wire/mq9";
import { mailboxReply, type Mq9Reply } from "./reply";
import type { MailboxCall } from "./push";

/** Path of the receiver of `address` (`POST` A2A push notifications there). */
export function a2aPushPath(address: string): string {
  return `/a2a/push/${encodeURIComponent(address)}`;
}

/** Runs one A2A.RECEIVER request on mailbox `subject.mailAddress` of `tenant`; throws Mq9Error on bad input. */
export async function handleA2aRequest(
  tenant: string, subject: Extract<Mq9Subject, { kind: `A2A.${string}` }>, payload: Uint8Array, call: MailboxCall,
): Promise<Mq9Reply> {
  parseNoFieldsRequest(payload);
  const address = subject.mailAddress;
  if (subject.kind === "A2A.RECEIVER.DELETE") {
    return mailboxReply(await call(async (stub) => stub.a2aReceiver(address, { op: "delete" })), () => ({}));
  }
  const token = newReceiverToken(tenant);
  const tokenHash = await sha256Hex(token);
  const r = await call(async (stub) => stub.a2aReceiver(address, { op: "set", tokenHash, nowMs: Date.now() }));
  return mailboxReply(r, () => ({ token, path: a2aPushPath(address) }));
}
