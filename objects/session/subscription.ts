/**
 * One SUB on a connection (docs/protocol.md "Read path"), pure state: the
 * group membership as this session knows it, the partitions it owns, the
 * credit window (push mode) or waiting PULLs (pull mode), and pushes held
 * back until the SUB's OK has been written.
 */
import type { TopicInfo } from "../registry/rpc";
import { CreditWindow, type Amount } from "./credit";

/** A partition the subscription was given (NOTICE ASSIGN), as the fetch loop sees it. */
export interface OwnedPartition {
  ownershipEpoch: number;
  /** False after NOTICE REVOKE (no more fetching; ACKs still go to the Partition, which decides). */
  active: boolean;
  /** A deliver call is in flight. */
  fetching: boolean;
  /** The last deliver found nothing: wait for the Partition's wake. */
  parked: boolean;
  /** A wake arrived while a deliver was in flight. */
  woken: boolean;
  /** The next record is this many value bytes and did not fit the last budget (0 = not blocked). */
  blockedBytes: number;
  /** Consecutive failed deliver calls (backoff), and whether a retry timer is pending. */
  failures: number;
  backoff: boolean;
}

/** A PULL waiting for records (spec §2 PULL). */
export interface PendingPull {
  slot: number;
  maxMsgs: number;
  maxBytes: number;
  minBytes: number;
  /** Answer at this time (ms) with whatever was collected. */
  deadline: number;
  frames: Uint8Array[];
  count: number;
  bytes: number;
  /** Deliver calls in flight for this PULL. */
  fetches: number;
  /** Budget handed to deliver calls in flight. */
  reserved: Amount;
  /** The oversized-first-record allowance was handed to a fetch. */
  oversizeUsed: boolean;
  expired: boolean;
  timer: ReturnType<typeof setTimeout> | null;
}

/** A NOTICE forwarded to the client, remembered until its CONTROL_ACK. */
export interface SentNotice {
  kind: number;
  partition: number;
  ownershipEpoch: number;
  membershipEpoch: number;
  assignmentEpoch: number;
}

/** Notices remembered per subscription (oldest forgotten first). */
const MAX_SENT_NOTICES = 4096;

export class Subscription {
  /** Group member id; 0 until the group answered the SUB. */
  memberId = 0;
  membershipEpoch = 0;
  /** Assignment epoch of the last NOTICE forwarded (or of the SUB). */
  assignmentEpoch = 0;
  /** When the group last accepted a HEARTBEAT, a lease renewal (or the join) of this member, ms; 0 = unknown. */
  groupHeardAt = 0;
  /** When the client last sent a valid HEARTBEAT for this member (or the join), ms: the session timeout runs from it. */
  heardAt = 0;
  /** The group removed the member (session timeout) or it left: requests get STALE_MEMBERSHIP_EPOCH. */
  removed = false;
  /** The SUB's OK was written; pushes may go straight out. */
  announced = false;
  readonly held: Uint8Array[] = [];
  readonly owned = new Map<number, OwnedPartition>();
  readonly credit: CreditWindow;
  readonly pulls: PendingPull[] = [];
  readonly notices = new Map<number, SentNotice>();
  /** Round-robin start for fetch order. */
  rr = 0;
  pumpScheduled = false;
  /** Push mode: a low-water wait is running; when it ran out, the next pump asks with any free credit. */
  lowWaterTimer = false;
  lowWaterWaived = false;

  constructor(
    readonly id: number,
    readonly group: string,
    readonly topic: TopicInfo,
    readonly pullMode: boolean,
    creditCount: number,
    creditBytes: number,
  ) {
    this.credit = new CreditWindow(creditCount, creditBytes);
  }

  /** Active partitions' ownership epochs in ascending partition order (what a PULL must echo). */
  ownershipEpochs(): number[] {
    return [...this.owned].filter(([, o]) => o.active).sort((a, b) => a[0] - b[0]).map(([, o]) => o.ownershipEpoch);
  }

  /**
   * Starts owning `partition` under `epoch` (NOTICE ASSIGN). Deliveries made
   * under an older epoch can no longer be settled (the fence put them up for
   * redelivery): they stop counting against the credit window.
   */
  assign(partition: number, epoch: number): void {
    const o = this.owned.get(partition);
    if (o && o.ownershipEpoch > epoch) return;
    if (o) {
      if (epoch > o.ownershipEpoch) this.credit.dropPartition(partition);
      o.ownershipEpoch = epoch;
      o.active = true;
      o.parked = false;
      o.blockedBytes = 0;
      return;
    }
    this.owned.set(partition, {
      ownershipEpoch: epoch, active: true, fetching: false, parked: false, woken: false, blockedBytes: 0, failures: 0, backoff: false,
    });
  }

  /** Stops fetching `partition` (NOTICE REVOKE for `epoch`). */
  revoke(partition: number, epoch: number): void {
    const o = this.owned.get(partition);
    if (o && o.ownershipEpoch <= epoch) o.active = false;
  }

  /** The revocation of `partition` completed: forget it and the credit of its outstanding deliveries. */
  release(partition: number, epoch: number): void {
    const o = this.owned.get(partition);
    if (!o || o.active || o.ownershipEpoch > epoch) return;
    this.owned.delete(partition);
    this.credit.dropPartition(partition);
  }

  /** Remembers a forwarded NOTICE until its CONTROL_ACK. */
  sent(noticeId: number, n: SentNotice): void {
    this.notices.set(noticeId, n);
    if (this.notices.size > MAX_SENT_NOTICES) this.notices.delete(this.notices.keys().next().value as number);
  }
}
