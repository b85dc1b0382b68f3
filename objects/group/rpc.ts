/** Types of the ConsumerGroup RPC surface (what a Session sees). */
import type { GroupDoc } from "../../wire/admin/groups";
import type { SessionRef } from "./state";

export type { SessionRef };

/** `ConsumerGroup.join` request (one SUB). */
export interface JoinRequest {
  session: SessionRef;
  /** Partitions of the topic (fixed per topic incarnation). */
  partitionCount: number;
  /** SUB start_policy; the first SUB of the group decides it for the group's lifetime. */
  startPolicy: number;
  /**
   * The member's lease, ms (GroupState Member.leaseMs): the session enforces
   * the session timeout itself and renews the lease (`renew`) at most every
   * half lease. Absent: the group enforces the session timeout (every
   * HEARTBEAT is forwarded).
   */
  leaseMs?: number;
}

/** `ConsumerGroup.join` answer: the SUB OK result fields. */
export interface JoinResult {
  memberId: number;
  membershipEpoch: number;
  assignmentEpoch: number;
}

/** A SUB the group refused (answered as the SUB's ERR): a new group over the topic's group limit (QUOTA_EXCEEDED). */
export interface JoinRefused {
  code: number;
  message: string;
}

/** The NOTICE fields a CONTROL_ACK echoes (spec §2 NOTICE / CONTROL_ACK). */
export interface NoticeFields {
  noticeId: number;
  kind: number; // NoticeKind
  membershipEpoch: number;
  assignmentEpoch: number;
  ownershipEpoch: number;
}

/** `ConsumerGroup.controlAck` request: the echoed NOTICE of member `memberId`. */
export interface ControlAckRequest extends NoticeFields {
  memberId: number;
  /** ControlAckResult (OK/STALE/ERROR); recorded, does not change the outcome. */
  result: number;
}

/** A NOTICE as the group hands it to the member's session (`MortarSession.groupNotice`). */
export interface NoticeDelivery extends NoticeFields {
  subscriptionId: number;
  memberId: number;
  topicId: number;
  partition: number;
}

/** `ConsumerGroup.info()`: membership, assignment and counters (for tests and the metrics issue). */
export interface GroupInfo {
  partitionCount: number;
  startPolicy: number;
  membershipEpoch: number;
  assignmentEpoch: number;
  members: { memberId: number; sessionId: string; subscriptionId: number; membershipEpoch: number; assignmentEpoch: number; partitions: number[] }[];
  partitions: { partition: number; owner: number | null; ownershipEpoch: number; revoking: boolean; resetPending: number | null }[];
  /** Deliveries paused until then (unix ms; possibly already past), null = not paused. */
  pausedUntil: number | null;
  /** Effects not yet executed (fences, notices). */
  pendingEffects: number;
  rebalances: number;
  forcedRevocations: number;
  expiredMembers: number;
}

/** The document without the topic's name (the group object knows only its topic_id). */
export type GroupDescription = Omit<GroupDoc, "topic">;

/** Where a reset moves one partition (`ConsumerGroup.reset`). */
export interface ResetPlanEntry {
  partition: number;
  /** The next sequence delivered after the reset. */
  nextSequence: number;
  /** The owner must confirm a REVOKE first (or the revocation timeout passes). */
  pending: boolean;
}
