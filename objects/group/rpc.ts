/** Types of the ConsumerGroup RPC surface (what a Session sees). */
import type { SessionRef } from "./state";

export type { SessionRef };

/** `ConsumerGroup.join` request (one SUB). */
export interface JoinRequest {
  session: SessionRef;
  /** Partitions of the topic (fixed per topic incarnation). */
  partitionCount: number;
  /** SUB start_policy; the first SUB of the group decides it for the group's lifetime. */
  startPolicy: number;
}

/** `ConsumerGroup.join` answer: the SUB OK result fields. */
export interface JoinResult {
  memberId: number;
  membershipEpoch: number;
  assignmentEpoch: number;
}

/** The NOTICE fields a CONTROL_ACK echoes (spec §2 CONTROL_ACK). */
export interface ControlAckRequest {
  memberId: number;
  noticeId: number;
  kind: number;
  membershipEpoch: number;
  assignmentEpoch: number;
  ownershipEpoch: number;
  /** ControlAckResult (OK/STALE/ERROR); recorded, does not change the outcome. */
  result: number;
}

/** `ConsumerGroup.info()`: membership, assignment and counters (for tests and the metrics issue). */
export interface GroupInfo {
  partitionCount: number;
  startPolicy: number;
  membershipEpoch: number;
  assignmentEpoch: number;
  members: { memberId: number; sessionId: string; subscriptionId: number; membershipEpoch: number; assignmentEpoch: number; partitions: number[] }[];
  partitions: { partition: number; owner: number | null; ownershipEpoch: number; revoking: boolean }[];
  /** Effects not yet executed (fences, notices). */
  pendingEffects: number;
  rebalances: number;
  forcedRevocations: number;
  expiredMembers: number;
}
