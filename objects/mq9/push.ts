/**
 * `$mq9.AI.PUSH.CREATE/LIST/DELETE.<mail_address>` (push delivery
 * extension, DESIGN §8; docs/push.md), for every transport through
 * handleMq9Request (dispatch.ts). CREATE checks the endpoint URL against
 * the deployment's policy (wire/mq9/push-url.ts) and the tenant's push
 * subscription limit and a mailbox slot for the dead-letter mailbox
 * before the Mailbox creates the subscription; CREATE
 * and DELETE tell the tenant's directory once the Mailbox has reported the
 * new count, so a deleted subscription's slot is free at once.
 */
import {
  MQ9_HTTP_STATUS,
  assertPushSource,
  checkPushUrl,
  deadLetterAddress,
  parsePushCreateRequest,
  parsePushDeleteRequest,
  parseNoFieldsRequest,
  type Mq9Subject,
} from "../../wire/mq9";
import type { Mailbox } from "../mailbox/Mailbox";
import type { Env } from "../env";
import { pushPolicy } from "../shared/push-config";
import { tenantStub } from "../tenants/stub";
import { mailboxIndexStub } from "../mailbox-index/stub";
import { mailboxReply, type Mq9Reply } from "./reply";

/** Issues one RPC on the mailbox's stub in the connection's order (dispatch.ts `ordered`). */
export type MailboxCall = <R>(rpc: (stub: DurableObjectStub<Mailbox>) => Promise<R>) => Promise<R>;

/**
 * Runs one PUSH request on mailbox `subject.mailAddress` of `tenant`.
 * Throws Mq9Error for bad input (the dispatcher turns it into the reply);
 * Mailbox errors and the tenant limit come back as replies.
 */
export async function handlePushRequest(
  env: Env, tenant: string, subject: Extract<Mq9Subject, { kind: `PUSH.${string}` }>, payload: Uint8Array, call: MailboxCall,
): Promise<Mq9Reply> {
  const address = subject.mailAddress;
  switch (subject.kind) {
    case "PUSH.CREATE":
      return await createPush(env, tenant, address, payload, call);
    case "PUSH.LIST":
      parseNoFieldsRequest(payload);
      return mailboxReply(await call(async (stub) => stub.listPushes(address)), (v) => ({ pushes: v.pushes }));
    case "PUSH.DELETE": {
      const pushId = parsePushDeleteRequest(payload);
      const r = await call(async (stub) => stub.deletePush(address, pushId));
      if (r.ok && r.reported) await tenantStub(env, tenant).pushesChanged().catch(() => {}); // its slot is free at once
      return mailboxReply(r, () => ({}));
    }
  }
}

/**
 * PUSH.CREATE: the tenant's push subscription limit, then a slot of its
 * mailbox count for the dead-letter mailbox `<address>.dlq` (none when it
 * exists already), then the subscription, then the `.dlq` mailbox itself
 * (with the source's TTL), so dead letters never take a mailbox past the
 * quota. Whatever is refused or fails gives back what was reserved.
 */
async function createPush(env: Env, tenant: string, address: string, payload: Uint8Array, call: MailboxCall): Promise<Mq9Reply> {
  const spec = parsePushCreateRequest(payload);
  assertPushSource(address);
  const url = checkPushUrl(spec.url, pushPolicy(env));
  const directory = tenantStub(env, tenant);
  const failOpen = () => ({ ok: true as const, at: undefined }); // the tenant's object did not answer: admitted, nothing to give back
  const admission = await directory.admitPush().catch(failOpen);
  if (!admission.ok) return refusal(admission);
  const dlq = deadLetterAddress(address);
  const slot = await directory.admitDeadLetterMailbox(dlq).catch(failOpen);
  if (!slot.ok) {
    if (admission.at !== undefined) await directory.unadmitPush(admission.at).catch(() => {});
    return refusal(slot);
  }
  const r = await call(async (stub) => stub.createPush(address, { ...spec, url }));
  if (admission.at !== undefined && (!r.ok || r.reported)) {
    // nothing created (the slot is free again), or the aggregator's gauge counts it now (the admission is no longer needed)
    await (r.ok ? directory.confirmPush(admission.at) : directory.unadmitPush(admission.at)).catch(() => {});
  }
  // the .dlq mailbox: created now (an existing one is kept); a slot it did not use is given back
  const made = r.ok ? await mailboxIndexStub(env, tenant).create(dlq, r.ttlSec).catch(() => null) : null;
  if (slot.at !== undefined && !made?.ok) await directory.unadmitMailbox(dlq, slot.at).catch(() => {});
  return mailboxReply(r, (v) => ({ push_id: v.pushId, ...(v.secret !== undefined ? { secret: v.secret } : {}) }));
}

/** The reply to a PUSH.CREATE refused by a tenant limit (429 quota_exceeded with Retry-After). */
function refusal(a: { message: string; retryAfterMs: number }): Mq9Reply {
  return { status: MQ9_HTTP_STATUS.quota_exceeded, code: "quota_exceeded", body: { error: a.message }, retryAfterS: Math.max(1, Math.ceil(a.retryAfterMs / 1000)) };
}
