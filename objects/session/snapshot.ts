/**
 * The read path's state that survives hibernation (issue #26 §2 (f)), pure:
 * what a MortarSession writes when its subscriptions change so that, once
 * the runtime evicted the idle object, the next event (a client frame, a
 * Partition's wake, a group's NOTICE) rebuilds the Consumer and carries on.
 *
 * Per subscription: id, topic, group, mode, member id and epochs, the
 * credit window (count, bytes, epoch), the owned partitions (ownership
 * epoch, active, parked, blocked bytes) and the NOTICEs awaiting their
 * CONTROL_ACK. Outstanding deliveries are not in it: the session stays in
 * memory while any is outstanding (Consumer.busy), so a snapshot taken
 * while idle is complete. JSON, one row (store.ts), written when its
 * structure changes, and when the session goes idle with parked flags
 * other than the stored ones (`structuralKey`).
 */
import type { TopicInfo } from "../registry/rpc";
import { Subscription, type SentNotice } from "./subscription";

/** One subscription as stored. */
export interface SubSnapshot {
  id: number;
  group: string;
  topic: TopicInfo;
  pullMode: boolean;
  memberId: number;
  membershipEpoch: number;
  assignmentEpoch: number;
  removed: boolean;
  credit: { count: number; bytes: number; epoch: number };
  /** [partition, ownershipEpoch, active, parked, blockedBytes] */
  owned: [number, number, boolean, boolean, number][];
  notices: [number, SentNotice][];
}

/** The read path of one connection as stored. */
export interface ConsumerSnapshot {
  /** The next subscription id to try. */
  nextId: number;
  subs: SubSnapshot[];
}

/** The snapshot of `subs` (joined or not; a SUB still joining is stored with member id 0). */
export function snapshotOf(subs: Iterable<Subscription>, nextId: number): ConsumerSnapshot {
  const out: SubSnapshot[] = [];
  for (const s of subs) {
    out.push({
      id: s.id, group: s.group, topic: s.topic, pullMode: s.pullMode, memberId: s.memberId, membershipEpoch: s.membershipEpoch,
      assignmentEpoch: s.assignmentEpoch, removed: s.removed, credit: { count: s.credit.count, bytes: s.credit.bytes, epoch: s.credit.epoch },
      owned: [...s.owned].map(([p, o]) => [p, o.ownershipEpoch, o.active, o.parked, o.blockedBytes]),
      notices: [...s.notices],
    });
  }
  return { nextId, subs: out };
}

/**
 * Subscriptions rebuilt from `snap`: announced (their SUB was answered
 * before the object went idle), nothing outstanding, no deliver call in
 * flight; partitions parked before stay parked (their Partition wakes the
 * session when records arrive).
 */
export function subscriptionsOf(snap: ConsumerSnapshot): Subscription[] {
  return snap.subs.map((r) => {
    const s = new Subscription(r.id, r.group, r.topic, r.pullMode, r.credit.count, r.credit.bytes);
    s.credit.epoch = r.credit.epoch;
    s.memberId = r.memberId;
    s.membershipEpoch = r.membershipEpoch;
    s.assignmentEpoch = r.assignmentEpoch;
    s.removed = r.removed;
    s.announced = true;
    for (const [p, epoch, active, parked, blockedBytes] of r.owned) {
      // pull mode: the next PULL asks every partition once (its parked flag may be older than the snapshot)
      s.owned.set(p, { ownershipEpoch: epoch, active, fetching: false, parked: parked && !r.pullMode, woken: false, blockedBytes, failures: 0, backoff: false });
    }
    for (const [id, n] of r.notices) s.notices.set(id, n);
    return s;
  });
}

/**
 * The part of `snap` that must be stored at once when it changes, as JSON:
 * everything but each partition's parked flag and blocked bytes, which
 * change with every delivery cycle and are only stored once the session
 * is idle (MortarSession: the one moment the runtime may evict it).
 */
export function structuralKey(snap: ConsumerSnapshot): string {
  return JSON.stringify(snap, (k, v: unknown) => (k === "owned" ? (v as SubSnapshot["owned"]).map((o) => [o[0], o[1], o[2]]) : v));
}

/** A stored snapshot is usable: well-formed, unique ids (anything else: the session closes 1011). */
export function validSnapshot(x: unknown): x is ConsumerSnapshot {
  if (!x || typeof x !== "object") return false;
  const s = x as ConsumerSnapshot;
  if (!Number.isInteger(s.nextId) || !Array.isArray(s.subs)) return false;
  const ids = new Set<number>();
  for (const r of s.subs) {
    if (!r || !Number.isInteger(r.id) || ids.has(r.id) || typeof r.group !== "string" || !r.topic || !Array.isArray(r.owned) || !Array.isArray(r.notices) || !r.credit) return false;
    ids.add(r.id);
  }
  return true;
}
