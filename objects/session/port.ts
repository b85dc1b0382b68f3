/**
 * The port of a MortarMQ connection (objects/session/connection.ts): every
 * effect the protocol machine needs, as calls it makes and the session
 * object executes. The connection builds no stub, reads no environment and
 * touches no socket; it decides what to ask and what to answer. The
 * MortarSession object implements the port with Durable Object stubs
 * (stub-port.ts) and its socket; unit tests implement it with a fake broker
 * (test/unit/mortar-session.test.ts), so whole sessions run in Node.
 *
 * Calls are addressed by what the connection knows: a topic's metadata
 * (TopicInfo: topic_id, incarnation), a partition number, a group name.
 * The tenant is the session's: the one `authenticate` accepted. A call
 * that fails on the platform rejects (the connection maps the error to a
 * wire code, faults.ts); protocol refusals are answers (`ok: false`, codes).
 */
import type { DeclareRetention } from "../../wire/mortar/frames";
import type { AuthResult } from "../tenants/rpc";
import type { Refusal } from "../tenants/gate";
import type { DeclareResult, LookupResult, TopicInfo } from "../registry/rpc";
import type { AppendResult, DeliverRequest, DeliverResult, SettleRequest, SettleResult } from "../partition/rpc";
import type { ControlAckRequest, JoinRefused, JoinRequest, JoinResult } from "../group/rpc";
import type { Subscription } from "./subscription";
import type { Operation, Resource } from "../../wire/admin/scopes";

/** What a MortarMQ connection asks of its session (see the module comment). */
export interface MortarPort {
  // ---------------------------------------------------------------- tenant (objects/tenants/connection-auth.ts)
  /** CONNECT: authenticates `token` (absent = none given) and takes a connection slot. The tenant of an `ok` answer is the connection's. */
  authenticate(token: string | undefined): Promise<AuthResult>;
  /** The quotas for one PUB storing `bytes` (key + value): resolves null = admitted, else the refusal. Awaited in the PUB's lane. */
  admitPublish(bytes: number): Promise<Refusal | null>;
  /**
   * May the connection's token perform `op` on `r` (docs/tenants.md
   * "Permissions")? Null = yes, else the refusal text (logged and counted);
   * decided in memory from what the last token check returned. `quiet`:
   * a refusal is neither logged nor counted (a question, not a refusal).
   */
  permit(op: Operation, r: Resource | null, quiet?: boolean): string | null;
  /** As `permit`, allowed when any of `ops` is allowed on topic `name` for some group (objects/tenants/permissions.ts permitAny). */
  permitAny(ops: readonly Operation[], name: string): string | null;

  // ---------------------------------------------------------------- TopicRegistry
  /** Topic metadata of `topicId` (UNKNOWN_TOPIC / TOPIC_DELETED as answers). */
  lookup(topicId: number): Promise<LookupResult>;
  /**
   * DECLARE (spec §2): create, check or delete (`flags`) topic `topic` (UTF-8 bytes);
   * `retention` is the RETENTION tail (extension, docs/protocol.md "Topic retention"), present with that flag;
   * `mayCreate` false: a missing topic is not created (PERMISSION_DENIED; the token lacks mortar.admin).
   */
  declare(topic: Uint8Array, partitionCount: number, flags: number, retention?: DeclareRetention, mayCreate?: boolean): Promise<DeclareResult>;

  // ---------------------------------------------------------------- Partition of (topic, partition)
  /** Appends a batch of PUB frames (objects/partition/batch.ts). */
  append(topic: TopicInfo, partition: number, batch: Uint8Array): Promise<AppendResult>;
  /** Takes deliverable records for a subscription of this session. */
  deliver(topic: TopicInfo, partition: number, req: DeliverRequest): Promise<DeliverResult>;
  /** Settles a batch of ACK/NACKs (the Partition decides: ownership epoch, owner, delivery). */
  settle(topic: TopicInfo, partition: number, req: SettleRequest): Promise<SettleResult>;

  // ---------------------------------------------------------------- ConsumerGroup of (topic, group)
  /** SUB: joins the group; its NOTICEs arrive through Consumer.notice (they may come before this answer). */
  join(topic: TopicInfo, group: string, req: JoinRequest): Promise<JoinResult | JoinRefused>;
  /** HEARTBEAT (LEAVE when `leave`): 0 or the wire error code. */
  heartbeat(topic: TopicInfo, group: string, memberId: number, membershipEpoch: number, assignmentEpoch: number, leave: boolean): Promise<number>;
  /** CONTROL_ACK of a NOTICE: 0 or the wire error code. */
  controlAck(topic: TopicInfo, group: string, req: ControlAckRequest): Promise<number>;
  /** The member leaves (connection closed). */
  leave(topic: TopicInfo, group: string, memberId: number, membershipEpoch: number): Promise<void>;
  /** Renews the member's group lease (JoinRequest.leaseMs): 0 or STALE_MEMBERSHIP_EPOCH. */
  renew(topic: TopicInfo, group: string, memberId: number, membershipEpoch: number): Promise<number>;
  /** The member passed its session timeout here: the group removes it as expired. */
  expire(topic: TopicInfo, group: string, memberId: number, membershipEpoch: number): Promise<void>;

  // ---------------------------------------------------------------- the socket and the session
  /** Writes bytes to the client (whole frames; the session cuts them into WebSocket messages). */
  send(bytes: Uint8Array): void;
  /** Closes the connection (after everything before was sent): WebSocket code and reason. */
  close(code: number, reason: string): void;
  /** The open subscriptions changed (the session records the memberships and stays in memory while any exist). */
  subscriptions(subs: ReadonlyMap<number, Subscription>): void;
  /** A complete frame with `op` was decoded (telemetry). */
  frameIn?(op: number): void;
}
