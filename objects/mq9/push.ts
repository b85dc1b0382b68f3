/**
 * `$mq9.AI.PUSH.CREATE/LIST/DELETE.<mail_address>` (push delivery
 * extension, DESIGN §8; docs/push.md), for every transport through
 * handleMq9Request (dispatch.ts). CREATE checks the endpoint URL against
 * the deployment's policy (wire/mq9/push-url.ts) and the tenant's push
 * subscription limit before the Mailbox creates the subscription; CREATE
 * and DELETE tell the tenant's directory once the Mailbox has reported the
 * new count, so a deleted subscription's slot is free at once.
 */
import {
  MQ9_HTTP_STATUS,
  assertPushSource,
  checkPushUrl,
  parsePushCreateRequest,
  parsePushDeleteRequest,
  parsePushListRequest,
  type Mq9Subject,
} from "../../wire/mq9";
import type { Mailbox } from "../mailbox/Mailbox";
import type { MailboxResult } from "../mailbox/rpc";
import type { Env } from "../env";
import { pushPolicy } from "../shared/push-config";
import { tenantStub } from "../tenants/stub";
import type { Mq9Reply } from "./dispatch";

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
    case "PUSH.CREATE": {
      const spec = parsePushCreateRequest(payload);
      assertPushSource(address);
      const url = checkPushUrl(spec.url, pushPolicy(env));
      const admission = await tenantStub(env, tenant).admitPush().catch(() => ({ ok: true as const, at: undefined }));
      if (!admission.ok) {
        return { status: MQ9_HTTP_STATUS.quota_exceeded, code: "quota_exceeded", body: { error: admission.message }, retryAfterS: Math.max(1, Math.ceil(admission.retryAfterMs / 1000)) };
      }
      const r = await call(async (stub) => stub.createPush(address, { ...spec, url }));
      if (admission.at !== undefined && (!r.ok || r.reported)) {
        // nothing created (the slot is free again), or the aggregator's gauge counts it now (the admission is no longer needed)
        const directory = tenantStub(env, tenant);
        await (r.ok ? directory.confirmPush(admission.at) : directory.unadmitPush(admission.at)).catch(() => {});
      }
      return reply(r, (v) => ({ push_id: v.pushId, ...(v.secret !== undefined ? { secret: v.secret } : {}) }));
    }
    case "PUSH.LIST":
      parsePushListRequest(payload);
      return reply(await call(async (stub) => stub.listPushes(address)), (v) => ({ pushes: v.pushes }));
    case "PUSH.DELETE": {
      const pushId = parsePushDeleteRequest(payload);
      const r = await call(async (stub) => stub.deletePush(address, pushId));
      if (r.ok && r.reported) await tenantStub(env, tenant).pushesChanged().catch(() => {}); // its slot is free at once
      return reply(r, () => ({}));
    }
  }
}

/** A Mailbox result as the reply: `fields` of a success, or `{error}` with its status. */
function reply<R extends MailboxResult>(r: R, fields: (v: Extract<R, { ok: true }>) => Record<string, unknown>): Mq9Reply {
  if (!r.ok) {
    const f = r as Extract<MailboxResult, { ok: false }>;
    return { status: MQ9_HTTP_STATUS[f.code], code: f.code, body: { error: f.error } };
  }
  return { status: 200, body: { error: "", ...fields(r as Extract<R, { ok: true }>) } };
}
