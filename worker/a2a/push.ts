/**
 * `POST /a2a/push/{mail_address}`: the mailbox as an A2A 1.0 push-notification
 * receiver (DESIGN §8 "A2A inbox", docs/a2a.md). The A2A server authenticates
 * with the mailbox's receiver token (`$mq9.AI.A2A.RECEIVER.CREATE`) in
 * `X-A2A-Notification-Token` (the SDK's `token`) or `Authorization: Bearer`
 * (its `authentication`). Each notification becomes one message through the
 * mq9 SEND path (quotas, metrics): payload = the body, `correlation_id` = the
 * task id, tags `a2a` and `a2a.<kind>`, `mq9-key` = a digest of task id and
 * body. A re-delivered notification whose message is still stored is
 * answered with that message's msg_id and not stored again, so it neither
 * duplicates nor moves behind later events (key compaction alone would
 * re-append it).
 *
 * Answers JSON `{error, msg_id?, duplicate?}`: 200 stored (or already
 * stored), 400 body not a notification / bad address, 401 token missing or
 * wrong (nothing stored), 404 no such mailbox, 413 body over the mq9 limit,
 * 429 quota.
 */
import type { Context } from "hono";
import { MAX_PAYLOAD_BYTES, a2aEventKey, assertMailAddress, parseA2aNotification, receiverTokenTenant, sha256Hex } from "../../wire/mq9";
import type { Env } from "../../objects/env";
import { bearerToken } from "../../objects/tenants/auth";
import { mailboxStub } from "../../objects/mailbox/stub";
import { handleMq9Request } from "../../objects/mq9/dispatch";
import { mq9RequestSeries } from "../../objects/mq9/request-metrics";
import { isolateMeter, WORKER_REQUESTS } from "../telemetry";
import { httpQuota } from "../quota";
import { readLimitedBody } from "../body-limit";
import { waitUntilOf } from "../mq9/http";

/** Route path (hono pattern). */
export const A2A_PUSH_ROUTE = "/a2a/push/:address";

/** Header the A2A SDK's DefaultPushNotificationSender puts the config's `token` in. */
export const A2A_TOKEN_HEADER = "x-a2a-notification-token";

/** Handler for `POST /a2a/push/{mail_address}`. */
export async function a2aPushHandler(c: Context<{ Bindings: Env }>): Promise<Response> {
  const token = c.req.header(A2A_TOKEN_HEADER) ?? bearerToken(c.req.header("authorization"));
  const tenant = token ? receiverTokenTenant(token) : null;
  if (!token || tenant === null) return c.json({ error: "a receiver token is required (X-A2A-Notification-Token or Authorization: Bearer)" }, 401);
  const address = c.req.param("address") ?? "";
  try {
    assertMailAddress(address);
  } catch {
    return c.json({ error: "invalid mail_address in the path" }, 400);
  }
  const check = await mailboxStub(c.env, tenant, address).a2aReceiver(address, { op: "check", tokenHash: await sha256Hex(token) });
  if (!check.ok) return c.json({ error: check.code === "mailbox_not_found" ? "mailbox not found" : "mailbox unavailable" }, check.code === "mailbox_not_found" ? 404 : 503);
  if (!check.valid) return c.json({ error: "wrong receiver token" }, 401);
  isolateMeter.add(tenant, WORKER_REQUESTS); // once the receiver token is shown good: a bad one names no tenant to bill
  const body = await readLimitedBody(c.req.raw, MAX_PAYLOAD_BYTES);
  if (!body.ok) {
    return body.encoding ? c.json({ error: body.encoding.error }, body.encoding.status) : c.json({ error: `notification exceeds the limit of ${MAX_PAYLOAD_BYTES} bytes` }, 413);
  }
  let event: ReturnType<typeof parseA2aNotification> = null;
  try {
    event = parseA2aNotification(JSON.parse(new TextDecoder().decode(body.bytes)));
  } catch {
    /* answered below */
  }
  if (!event) return c.json({ error: "body is not an A2A push notification (a StreamResponse with task, statusUpdate, artifactUpdate or message and its task id)" }, 400);
  const key = await a2aEventKey(event.taskId, body.bytes);
  const quota = httpQuota(c.env, tenant, undefined);
  const ctx = { waitUntil: waitUntilOf(c), quota };
  const known = await handleMq9Request(c.env, tenant, { subject: `$mq9.AI.MSG.QUERY.${address}`, headers: new Map(), payload: new TextEncoder().encode(JSON.stringify({ key, limit: 1 })) }, ctx);
  const stored = (known.body as { messages?: { msg_id: number }[] }).messages;
  if (known.status === 200 && stored && stored.length > 0) return c.json({ error: "", msg_id: stored[0]!.msg_id, duplicate: true }, 200);
  const headers = new Map([
    ["mq9-key", key],
    ["mq9-tags", `a2a,a2a.${event.kind}`],
    ["mq9-correlation-id", event.taskId],
  ]);
  const subject = `$mq9.AI.MSG.SEND.${address}`;
  const reply = await handleMq9Request(c.env, tenant, { subject, headers, payload: body.bytes }, ctx);
  isolateMeter.add(tenant, mq9RequestSeries(subject, reply, "http"));
  isolateMeter.maybeFlush(c.env, ctx.waitUntil);
  const out: Record<string, string> = {};
  if (reply.retryAfterS !== undefined) out["Retry-After"] = String(reply.retryAfterS);
  return c.json(reply.body, reply.status as 200, out);
}
