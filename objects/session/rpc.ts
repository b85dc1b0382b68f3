/**
 * Types of the MortarSession RPC surface (objects/session/MortarSession.ts).
 * A connection's object is opened by `fetch` — the WebSocket upgrade of
 * `GET /v0/mortar`, a fresh id per connection (stub.ts newSessionStub) —
 * and is then called back by the objects of the read path, by id
 * (sessionStub; the id travels in SessionRef / OwnerRef). What the
 * connection asks of other objects is its port (port.ts).
 */
import type { NoticeDelivery } from "../group/rpc";
import type { DeliverResult } from "../partition/rpc";

/** The calls ConsumerGroups and Partitions make back to a connection. A call for a connection that is gone answers false (or nothing). */
export interface SessionCallbacks {
  /** A NOTICE for one of this connection's members. False when it does not hold that member (the group then removes it). */
  groupNotice(n: NoticeDelivery): boolean;
  /** A Partition has records for `partition` of subscription `subscriptionId`. False when the subscription is gone. */
  wake(subscriptionId: number, partition: number): boolean;
  /**
   * A Partition's deliveries made under `ownershipEpoch` within the budget
   * the subscription left standing (DeliverRequest.carry), carried in the
   * wake. True when all were taken (pushed to the client); false when none
   * was (no room, not owned under that epoch, or the subscription is gone):
   * the Partition takes them back and the session asks again by itself.
   */
  carry(subscriptionId: number, partition: number, ownershipEpoch: number, r: DeliverResult): boolean;
  /**
   * A Partition's deliveries (`seqs[i]`, `deliveryIds[i]`) to
   * `subscriptionId` passed their work deadline: their credit returns.
   * False when the subscription is gone.
   */
  expired(subscriptionId: number, partition: number, seqs: number[], deliveryIds: number[]): boolean;
  /** Whether this session still holds `memberId` on `subscriptionId`. */
  hasMember(subscriptionId: number, memberId: number): boolean;
  /** The group removed the member (session timeout). */
  groupRemoved(subscriptionId: number, memberId: number): void;
}
