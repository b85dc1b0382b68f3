/**
 * The TenantDirectory's purge role: a deleted tenant's data purged from the
 * object's alarm, one bounded step per run (`Purger`), and the step itself
 * (`purgeStep`): the calls to the tenant's objects. Each object's `purge()`
 * deletes all of its storage and is safe to call twice, so a step that
 * failed half way (or was cut off by a crash) is simply run again with the
 * same state. The pure part (phases, timing, progress) is purge.ts.
 */
import type { Env } from "../env";
import { registryStub } from "../registry/stub";
import { partitionStub } from "../partition/stub";
import { groupStub } from "../group/stub";
import { freshMailboxTarget } from "../mq9/stubs";
import { agentRegistryStub } from "../agents/stub";
import { mailboxIndexStub } from "../mailbox-index/stub";
import { usageIndexStub, usageStub } from "../usage/stub";
import type { PurgeTarget } from "../registry/rpc";
import { mapLimit } from "../shared/concurrency";
import { withDeadline } from "../session/faults";
import { PURGE_PAGE, nextPhase, nextStepAt, type PurgeState } from "./purge";
import type { TenantStore } from "./store";
import { AlarmScheduler } from "../shared/scheduler";

/** Object calls in flight at once inside a step. */
const FANOUT = 16;

/** Runs the stored purge of one tenant, a step per alarm. */
export class Purger {
  /** When the purge's next step is due (ms), null = none known in memory (a stored alarm still runs it: `everyAlarm`). */
  private at: number | null = null;
  /** The object's one alarm (shared/scheduler.ts): the purge's steps, armed 1 s ahead while a step runs. */
  private readonly scheduler: AlarmScheduler;

  constructor(private readonly env: Env, storage: DurableObjectStorage, private readonly store: TenantStore, private readonly tenant: string) {
    this.scheduler = new AlarmScheduler(storage, { owner: "TenantDirectory", guardMs: 1_000 })
      .part("purge", { due: () => this.at, everyAlarm: true, run: (now) => this.run(now) });
  }

  /** The object's alarm: the scheduler runs the purge step when it is due. */
  alarm(): Promise<void> {
    return this.scheduler.alarm();
  }

  /**
   * One step (purgeStep), stored, then the next step armed. A failed step
   * is kept with its error and retried with backoff (purge.ts nextStepAt);
   * when the purge is done the tokens and leases go.
   */
  private async run(now: number): Promise<void> {
    const s = this.store.purge();
    this.at = null;
    if (!s || s.phase === "done" || this.tenant === "") return;
    let next: PurgeState;
    try {
      next = await purgeStep(this.env, this.tenant, s, now);
    } catch (e) {
      next = { ...s, failures: s.failures + 1, lastError: e instanceof Error ? e.message : String(e) };
      console.warn(`TenantDirectory ${this.tenant}: purge step ${s.phase} failed (attempt ${next.failures}): ${next.lastError}`);
    }
    this.store.tx(() => {
      this.store.setPurge(next);
      if (next.phase === "done") {
        this.store.dropTokens();
        this.store.dropLeases();
      }
    });
    await this.arm(Date.now());
  }

  /** Arms the alarm for the purge's next step (or lets the scheduler delete it when there is none). */
  async arm(now: number): Promise<void> {
    const s = this.store.purge();
    this.at = s ? nextStepAt(s, now) : null;
    await this.scheduler.rearm();
  }
}

/**
 * Runs the step the state is at and returns the state after it (the caller
 * stores it). A `waiting` purge before its start time is returned as it is.
 * @throws when a call failed: nothing of the state moved on (retry the same step)
 */
export async function purgeStep(env: Env, tenant: string, s: PurgeState, now: number): Promise<PurgeState> {
  const done = (patch: Partial<PurgeState>): PurgeState => ({ ...s, ...patch, steps: s.steps + 1, lastError: null, failures: 0 });
  const advance = (patch: Partial<PurgeState> = {}): PurgeState => done({ ...patch, phase: nextPhase(s.phase), cursor: null });
  const registry = registryStub(env, tenant);
  const index = mailboxIndexStub(env, tenant);
  switch (s.phase) {
    case "waiting": {
      if (now < s.startAt) return s;
      const [t, mailboxes] = await Promise.all([withDeadline(registry.purgeTotals()), withDeadline(index.count())]);
      return advance({ startedAt: now, estimated: { groups: t.groups, partitions: t.partitions, mailboxes } });
    }
    case "topics": {
      const page = await withDeadline(registry.purgeTargets(s.cursor, PURGE_PAGE));
      const counts = await purgeTargets(env, tenant, page.targets);
      const purged = { ...s.purged, groups: s.purged.groups + counts.groups, partitions: s.purged.partitions + counts.partitions };
      return page.next === null ? advance({ purged }) : done({ purged, cursor: page.next });
    }
    case "mailboxes": {
      // a mailbox no object holds yet is only its index row: it goes with the index (phase mailbox-index);
      // sealed first, so no mailbox is opened after its page was read (MailboxIndex.seal)
      if (s.cursor === null) await withDeadline(index.seal());
      const page = await withDeadline(index.rows(s.cursor, PURGE_PAGE));
      const opened = page.rows.filter((m) => m.materialized);
      await mapLimit(opened, FANOUT, (m) => withDeadline(freshMailboxTarget(env, tenant, m.address).stub.purge()));
      const purged = { ...s.purged, mailboxes: s.purged.mailboxes + page.rows.length };
      return page.next === null ? advance({ purged }) : done({ purged, cursor: page.next });
    }
    case "agents":
      await withDeadline(agentRegistryStub(env, tenant).purge());
      return advance();
    case "registry":
      await withDeadline(registry.purge());
      return advance();
    case "mailbox-index":
      await withDeadline(index.purge());
      return advance();
    case "usage":
      await withDeadline(usageStub(env, tenant).purge());
      await withDeadline(usageIndexStub(env).removeTenant(tenant));
      return advance({ finishedAt: now });
    case "done":
      return s;
  }
}

/**
 * Purges one page: groups, and partitions — whose answer names the groups
 * they had positions for, purged too (groups from before the registry's
 * group index). Returns how many of each were purged.
 */
async function purgeTargets(env: Env, tenant: string, targets: readonly PurgeTarget[]): Promise<{ groups: number; partitions: number }> {
  let groups = 0, partitions = 0;
  const found: { incarnation: number; topicId: number; group: string }[] = [];
  await mapLimit(targets, FANOUT, async (t) => {
    if (t.kind === "group") {
      await withDeadline(groupStub(env, tenant, t.incarnation, t.topicId, t.group).purge());
      groups++;
    } else {
      const r = await withDeadline(partitionStub(env, tenant, t.incarnation, t.topicId, t.partition).purge());
      for (const g of r.groups) found.push({ incarnation: t.incarnation, topicId: t.topicId, group: g });
      partitions++;
    }
  });
  const unique = [...new Map(found.map((g) => [`${g.incarnation}/${g.topicId}/${g.group}`, g])).values()];
  await mapLimit(unique, FANOUT, (g) => withDeadline(groupStub(env, tenant, g.incarnation, g.topicId, g.group).purge()));
  return { groups, partitions };
}
