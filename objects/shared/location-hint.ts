/**
 * Topic placement (docs/deploy.md "Placement"; issue 27 item 6): a topic
 * created with a location hint has its Partition objects (source and `.dlq`
 * twin) and its ConsumerGroups started with `namespace.get(id,
 * { locationHint })`. Cloudflare honours a hint only when the object is
 * first created, as a best effort; later calls' hints are ignored.
 *
 * Stubs are made synchronously from ids (partitionStub, groupStub), so the
 * hint comes from what this isolate learnt about the topic: every TopicInfo
 * the TopicRegistry answers (the sessions' topic lookups and DECLAREs, the
 * HTTP topic routes) and a partition's registration answer are noted here
 * (`noteTopicHint`), keyed by tenant and topic incarnation (a twin shares
 * its source's). The paths that first start a topic's objects — a PUB or
 * SUB through a session, an HTTP publish, a partition dead-lettering to its
 * twin — all hold the topic's TopicInfo, so they pass the hint. An object
 * started by a call that knew no hint (e.g. a ConsumerGroup's admin call
 * after an isolate restart) starts near its caller, itself started near
 * the hinted region. Combined with a tenant's jurisdiction
 * (jurisdiction.ts), both apply: the jurisdiction is a guarantee, the hint
 * a preference inside it.
 */
import type { LocationHint } from "../../wire/admin/location-hint";

/** Hints learnt, by `tenant/incarnation` (null: the topic has none). Bounded: the oldest are dropped. */
const learnt = new Map<string, LocationHint | null>();
const MAX_LEARNT = 10_000;

const keyOf = (tenant: string, incarnation: number) => `${tenant}/${incarnation}`;

/**
 * This isolate learnt the hint of `tenant`'s topic incarnation
 * `topic.incarnation` (a TopicInfo, or a registration answer): absent or
 * null = none.
 */
export function noteTopicHint(tenant: string, topic: { incarnation: number; locationHint?: LocationHint | null }): void {
  const key = keyOf(tenant, topic.incarnation);
  const hint = topic.locationHint ?? null;
  const known = learnt.get(key);
  // The common case: known already (undefined ≠ null). A topic's hint never changes (set at its
  // creation only), so a TopicInfo without one (e.g. restored from a snapshot older than hints)
  // never erases a hint learnt for the same incarnation.
  if (known === hint || (hint === null && known)) return;
  learnt.delete(key);
  if (learnt.size >= MAX_LEARNT) learnt.delete(learnt.keys().next().value!);
  learnt.set(key, hint);
}

/**
 * The `get()` options of an object of `tenant`'s topic incarnation
 * `incarnation` (a Partition of the source or twin, a ConsumerGroup):
 * `{ locationHint }` when the isolate knows the topic has one, else
 * undefined (the runtime's default placement: near the caller).
 */
export function topicObjectOptions(tenant: string, incarnation: number): { locationHint: LocationHint } | undefined {
  const hint = learnt.get(keyOf(tenant, incarnation));
  return hint ? { locationHint: hint } : undefined;
}
