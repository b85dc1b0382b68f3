/**
 * The one mq9 request handler shared by every transport (HTTP `POST
 * /mq9/<subject>` and the NATS protocol session): takes a subject, the
 * `mq9-*` headers and the payload, and returns the JSON reply of the mq9
 * spec plus an HTTP status for transports that have one.
 *
 * Mailbox subjects go to the Mailbox Durable Object of
 * `objectName("mailbox", tenant, address)` (`$mq9.AI.PUSH.*` through
 * `handlePushRequest`, objects/mq9/push.ts); `$mq9.AI.AGENT.*` subjects go
 * to `handleAgentRequest` (objects/mq9/agents.ts).
 */
import {
  MAX_PAYLOAD_BYTES,
  MQ9_HTTP_STATUS,
  Mq9Error,
  assertMailAddress,
  echo,
  generateMailAddress,
  parseAckRequest,
  parseCreateRequest,
  parseNoFieldsRequest,
  parseFetchRequest,
  parseMq9Headers,
  parseMq9Subject,
  parseQueryRequest,
  sendMetadataBytes,
  DEFAULT_MAILBOX_TTL_S,
  mq9Messages,
  type FetchSpec,
  type Mq9Message,
} from "../../wire/mq9";
import type { Mailbox } from "../mailbox/Mailbox";
import type { MailboxResult } from "../mailbox/rpc";
import type { Env } from "../env";
import { handleAgentRequest, type MayRegister } from "./agents";
import { handleA2aRequest } from "./a2a";
import { handlePushRequest } from "./push";
import { DIRECT, type MailboxCalls } from "./sendbatch";
import { freshMailboxTarget, type MailboxStubs, type MailboxTarget } from "./stubs";
import { CREATE_ADMITTED, admitMailbox, type CreateAdmission, type Mq9Quota } from "../tenants/connection-auth";
import type { Refusal } from "../tenants/gate";
import { errorReply, mailboxReply, quotaReply, type Mq9Reply } from "./reply";
import { mailboxIndexStub } from "../mailbox-index/stub";
import type { MailboxIndex } from "../mailbox-index/MailboxIndex";
import type { IndexCreate } from "../mailbox-index/rpc";
import { permit, type Permit } from "../tenants/permissions";
import type { Operation, Resource } from "../../wire/admin/scopes";
import { mailboxKey } from "../../wire/mq9/agent-requests";
import { longPollFetch, type LongPollBudget } from "./long-poll";

/** One mq9 request as every transport sees it. */
export interface Mq9Request {
  /** Full subject, e.g. `$mq9.AI.MSG.SEND.task.001`. */
  subject: string;
  /** NATS headers / HTTP `mq9-*` headers; names are matched case-insensitively. */
  headers: Map<string, string>;
  /** NATS payload / HTTP body bytes. */
  payload: Uint8Array;
}

/** How a transport tells the handler that its client went away. */
export interface Mq9RequestContext {
  /**
   * Aborted when the client is gone (HTTP request aborted, NATS connection
   * closed): a held long-poll FETCH is then released in its Mailbox at once.
   */
  signal?: AbortSignal;
  /** Keeps the invocation alive for the release call (the Worker's `ctx.waitUntil`). */
  waitUntil?: (p: Promise<unknown>) => void;
  /**
   * The connection's mailbox lanes (NATS sessions, objects/mq9/sendbatch.ts):
   * requests reach each mailbox in order, same-mailbox SENDs of one run
   * share one RPC. Absent: each request is issued at once (HTTP).
   */
  sends?: MailboxCalls;
  /** The connection's Mailbox stub cache (NATS sessions); absent = a fresh stub per request. */
  stubs?: MailboxStubs;
  /** The tenant's quotas (publish rate and storage for SEND, mailbox count for CREATE); absent = none checked. */
  quota?: Mq9Quota;
  /** The caller's token scopes (objects/tenants/permissions.ts); absent = full tenant access. */
  permit?: Permit;
  /**
   * Long-poll FETCHes this caller may wait for itself, each on a socket
   * parked at the Mailbox (long-poll.ts: the Mailbox can be evicted while
   * they wait); beyond it, or absent, they are held in the Mailbox's memory.
   */
  longPolls?: LongPollBudget;
}

/** Throws the mq9 `forbidden` error (HTTP 403) when the caller's scopes refuse `op` on `r`. */
function allow(ctx: Mq9RequestContext, op: Operation, r: Resource | null): void {
  if (!ctx.permit?.scopes) return;
  const refused = permit(ctx.permit, op, r);
  if (refused !== null) throw new Mq9Error("forbidden", refused);
}

/** For a scoped caller: may it register an agent with this mailbox key (re-registering a name replaces that agent)? */
function mayRegister(ctx: Mq9RequestContext): MayRegister | undefined {
  const who = ctx.permit;
  if (!who?.scopes) return undefined;
  return (mailbox) => permit(who, "agents.register", mailbox === null ? null : { name: mailbox });
}

/** The mailbox an agent request names (`mailbox` of its body), for agents.register scopes; null when it names none. */
function agentMailbox(payload: Uint8Array): Resource | null {
  try {
    const b = JSON.parse(new TextDecoder().decode(payload)) as { mailbox?: unknown };
    return typeof b?.mailbox === "string" && b.mailbox.trim() !== "" ? { name: mailboxKey(b.mailbox) } : null;
  } catch {
    return null; // the request's own parse answers the bad body
  }
}

/** Generated-address collisions tolerated before giving up (never expected: 160 random bits). */
const CREATE_ATTEMPTS = 3;

/**
 * Runs one mq9 request for `tenant`. Never throws: failures become
 * `{error}` replies with the status of MQ9_HTTP_STATUS (400 bad input,
 * 404 unknown subject / mailbox / message, 409 mailbox exists, 413 payload
 * too large, 429 overloaded, 503 object unavailable, 500 internal).
 * CREATE replies always carry `mail_address` ("" on error).
 */
export async function handleMq9Request(env: Env, tenant: string, req: Mq9Request, ctx: Mq9RequestContext = {}): Promise<Mq9Reply> {
  let isCreate = false;
  let target: MailboxTarget | null = null;
  try {
    if (req.payload.byteLength > MAX_PAYLOAD_BYTES) {
      throw new Mq9Error("payload_too_large", `payload of ${req.payload.byteLength} bytes exceeds the limit of ${MAX_PAYLOAD_BYTES} bytes`);
    }
    const subject = parseMq9Subject(req.subject);
    switch (subject.kind) {
      case "MAILBOX.CREATE":
        isCreate = true;
        return await create(env, tenant, req.payload, ctx);
      case "MSG.SEND": {
        const opts = parseMq9Headers(req.headers);
        const address = subject.mailAddress;
        allow(ctx, "mq9.send", { name: address });
        const admission = ctx.quota?.admitSend(req.payload.byteLength + sendMetadataBytes(opts));
        const t = (target = mailboxTarget(env, tenant, address, ctx));
        const r = await calls(ctx).send(t, address, opts, req.payload, admission);
        if ("refused" in r) return quotaReply(r.refused);
        // the reply text written directly: what JSON.stringify(body) gives, without it (every SEND's reply)
        if (!r.ok) return mailboxReply(r, () => ({}));
        return { status: 200, body: { error: "", msg_id: r.msgId }, json: `{"error":"","msg_id":${r.msgId}}` };
      }
      case "MSG.FETCH": {
        const spec = parseFetchRequest(req.payload);
        allow(ctx, "mq9.fetch", spec.group === null ? { name: subject.mailAddress } : { name: subject.mailAddress, group: spec.group });
        const t = (target = mailboxTarget(env, tenant, subject.mailAddress, ctx));
        const r = await ordered(ctx, t, () => fetchCancellable(t.stub, subject.mailAddress, spec, ctx));
        return mailboxReply(r, (v) => ({ messages: v.messages }));
      }
      case "MSG.ACK": {
        const ack = parseAckRequest(req.payload);
        if (ack.mailAddress !== subject.mailAddress) {
          throw new Mq9Error("bad_request", `mail_address "${echo(ack.mailAddress)}" does not match the subject's mailbox ${subject.mailAddress}`);
        }
        allow(ctx, "mq9.ack", { name: subject.mailAddress, group: ack.group });
        const t = (target = mailboxTarget(env, tenant, subject.mailAddress, ctx));
        const r = await ordered(ctx, t, async () => t.stub.ack(subject.mailAddress, ack.group, ack.msgId));
        return mailboxReply(r, () => ({}));
      }
      case "MSG.QUERY": {
        const spec = parseQueryRequest(req.payload);
        allow(ctx, "mq9.query", { name: subject.mailAddress });
        const t = (target = mailboxTarget(env, tenant, subject.mailAddress, ctx));
        const r = await ordered(ctx, t, async () => t.stub.query(subject.mailAddress, spec));
        return mailboxReply(r, (v) => ({ messages: v.messages }));
      }
      case "MSG.DELETE": {
        parseNoFieldsRequest(req.payload);
        allow(ctx, "mq9.delete", { name: subject.mailAddress });
        const t = (target = mailboxTarget(env, tenant, subject.mailAddress, ctx));
        const r = await ordered(ctx, t, async () => t.stub.deleteMessage(subject.mailAddress, subject.msgId));
        return mailboxReply(r, () => ({ deleted: true }));
      }
      case "PUSH.CREATE":
      case "PUSH.LIST":
      case "PUSH.DELETE": {
        allow(ctx, "mq9.push", { name: subject.mailAddress });
        const t = (target = mailboxTarget(env, tenant, subject.mailAddress, ctx));
        return await handlePushRequest(env, tenant, subject, req.payload, (rpc) => ordered(ctx, t, () => rpc(t.stub)));
      }
      case "A2A.RECEIVER.CREATE":
      case "A2A.RECEIVER.DELETE": {
        allow(ctx, "mq9.push", { name: subject.mailAddress }); // a receiver lets an outside server write to the mailbox, as a push route reads from it
        const t = (target = mailboxTarget(env, tenant, subject.mailAddress, ctx));
        return await handleA2aRequest(tenant, subject, req.payload, (rpc) => ordered(ctx, t, () => rpc(t.stub)));
      }
      default:
        if (subject.verb === "DISCOVER") allow(ctx, "agents.discover", null);
        else allow(ctx, "agents.register", agentMailbox(req.payload));
        return await handleAgentRequest(env, tenant, subject.verb, req.payload, mayRegister(ctx));
    }
  } catch (e) {
    if (target) ctx.stubs?.evict(target.key); // a platform error can leave the stub broken
    const r = errorReply(e);
    if (isCreate) r.body.mail_address = "";
    return r;
  }
}

/** The Mailbox of `address`: from the caller's stub cache when it has one, else a fresh stub. */
function mailboxTarget(env: Env, tenant: string, address: string, ctx: Mq9RequestContext): MailboxTarget {
  return ctx.stubs ? ctx.stubs.get(tenant, address) : freshMailboxTarget(env, tenant, address);
}

/** How this request reaches its Mailbox: the connection's lanes, or at once. */
function calls(ctx: Mq9RequestContext): MailboxCalls {
  return ctx.sends ?? DIRECT;
}

/**
 * Issues an RPC other than SEND to mailbox `t` in the connection's order
 * (after the requests the connection queued for it before this one, on the
 * same stub: sendbatch.ts). `call` issues the RPC and returns its reply.
 */
async function ordered<R>(ctx: Mq9RequestContext, t: MailboxTarget, call: () => Promise<R>): Promise<R> {
  return (await calls(ctx).call(t, call)) as R; // no admission: never refused
}

/**
 * MAILBOX.CREATE: validates the request, asks the mailbox limits (rate,
 * then the count in the tenant's MailboxIndex), then writes the mailbox's
 * row in that index — the whole of a CREATE: no Mailbox object is opened
 * (docs/mq9.md "Mailbox index"; it takes the row over on first use). Both
 * run inside the mailbox's lane, as its admission, so a connection's
 * requests pipelined after the CREATE reach the Mailbox only once the row
 * exists. A CREATE that creates nothing gives its quota slot back; a
 * generated address that collides is drawn again (its slot lapses).
 */
async function create(env: Env, tenant: string, payload: Uint8Array, ctx: Mq9RequestContext): Promise<Mq9Reply> {
  const spec = parseCreateRequest(payload);
  const ttlSec = spec.ttlSec ?? DEFAULT_MAILBOX_TTL_S;
  if (spec.name !== null) assertMailAddress(spec.name);
  allow(ctx, "mq9.create", spec.name === null ? null : { name: spec.name });
  const index = mailboxIndexStub(env, tenant);
  let address = spec.name ?? generateMailAddress();
  let granted: CreateAdmission = CREATE_ADMITTED;
  let made: RowWrite | null = null;
  const admission = (ctx.quota ? ctx.quota.admitCreate(address) : admitMailbox(env, tenant, address)).then(async (a) => {
    granted = a;
    if (!a.ok) return a.refuse;
    made = await writeRow(index, address, ttlSec);
    return null;
  });
  const t = mailboxTarget(env, tenant, address, ctx);
  const r = await calls(ctx).call(t, async () => made, admission);
  if (r !== null && "refused" in r) return createRefused(r.refused);
  for (let attempt = 1; ; attempt++) {
    const m = (made as RowWrite | null) ?? { failed: new Error("the CREATE's admission ended without writing its row") };
    if ("ok" in m && m.ok) return { status: 200, body: { error: "", mail_address: address } };
    const collided = "exists" in m && spec.name === null && attempt < CREATE_ATTEMPTS; // only a generated address is drawn again
    if (!collided) {
      if (granted.ok) await granted.undo();
      if ("failed" in m) throw m.failed;
      if ("deleted" in m) return { status: MQ9_HTTP_STATUS.unauthorized, code: "unauthorized", body: { error: `unauthorized: tenant ${tenant} was deleted`, mail_address: "" } };
      return { status: MQ9_HTTP_STATUS.mailbox_exists, code: "mailbox_exists", body: { error: mq9Messages.mailboxExists(address), mail_address: "" } };
    }
    address = generateMailAddress(); // a new one, which nobody can have requests queued for
    made = await writeRow(index, address, ttlSec);
  }
}

/** A CREATE's index write: its answer, or what it threw. */
type RowWrite = IndexCreate | { failed: unknown };

/** Writes the mailbox row of a CREATE in the tenant's index (MailboxIndex.create); never rejects. */
async function writeRow(index: DurableObjectStub<MailboxIndex>, address: string, ttlSec: number): Promise<RowWrite> {
  try {
    return await index.create(address, ttlSec);
  } catch (e) {
    return { failed: e };
  }
}

/** The reply to a CREATE refused by the mailbox quota. */
function createRefused(r: Refusal): Mq9Reply {
  const q = quotaReply(r);
  return { ...q, body: { error: r.message, mail_address: "" } };
}

/**
 * FETCH: a long-poll waited for by the caller while `ctx.longPolls` has
 * room (long-poll.ts). Otherwise one that releases its slot when `ctx.signal` aborts: the held
 * request gets a random waiter id, and an abort calls `cancelFetch(id)` on
 * the same stub (calls on one stub are delivered in order, so the cancel
 * never overtakes the FETCH). A client already gone does not wait at all.
 */
async function fetchCancellable(
  stub: DurableObjectStub<Mailbox>,
  address: string,
  spec: FetchSpec,
  ctx: Mq9RequestContext,
): Promise<MailboxResult<{ messages: Mq9Message[] }>> {
  if (spec.maxWaitMs > 0 && ctx.longPolls?.take()) {
    try {
      return await longPollFetch(stub, address, spec, ctx.signal);
    } finally {
      ctx.longPolls.give();
    }
  }
  const signal = ctx.signal;
  if (!signal || spec.maxWaitMs === 0) return stub.fetchMessages(address, spec);
  if (signal.aborted) return stub.fetchMessages(address, { ...spec, maxWaitMs: 0 });
  const waiterId = crypto.randomUUID();
  const onAbort = () => {
    const release = stub.cancelFetch(waiterId).catch(() => false); // the object is gone: so is the waiter
    ctx.waitUntil?.(release);
  };
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    return await stub.fetchMessages(address, spec, waiterId);
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}
