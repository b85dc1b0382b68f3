/**
 * What a tenant purge must visit of the tenant's topics (docs/tenants.md
 * "Deleting a tenant"), read page by page from its TopicRegistry: every
 * consumer group recorded (group-store.ts), every partition of every live
 * topic and its `.dlq` twin, every partition that registered itself
 * (`written`; those of live topics are skipped, the previous stage named
 * them), every partition a topic delete marked deleted (`retired`: it keeps
 * a small marker row), and every partition of a topic whose delete is still
 * queued from before registration existed (`purges`, legacy). Each object
 * is named once (a page repeated after a crash names some twice: purging an
 * object twice is a no-op).
 *
 * Pages are cut so that one page never holds partitions of two topic ids:
 * a purger that finishes a page before the next one therefore purges a
 * source topic's partitions (which wait for their dead-letter transfer to
 * the twin) before those of its twin.
 *
 * The cursor is an opaque string (JSON of stage and position). The pages
 * read the registry's tables (`topics`, `topic_groups`, `written`,
 * `purges`, `registry_meta` of store.ts and group-store.ts); this store owns
 * the `retired` table, and `retire` is its one write.
 */
import type { PurgeTarget, PurgeTargetPage, PurgeTotals } from "./rpc";

const STAGES = ["groups", "topics", "written", "retired", "purges"] as const;

interface Cursor {
  /** Index into STAGES. */
  s: number;
  /** Position inside the stage: incarnation, topic id (or pair), partition, group name. */
  i: number;
  t: number;
  p: number;
  g: string;
}

/** The tenant purge's view of one registry, and its `retired` table. */
export class PurgeTargetStore {
  /** Creates the `retired` table if missing. */
  constructor(private readonly sql: SqlStorage) {
    sql.exec(`CREATE TABLE IF NOT EXISTS retired(incarnation INTEGER NOT NULL, topic_id INTEGER NOT NULL, partition INTEGER NOT NULL,
      PRIMARY KEY(incarnation, topic_id, partition)) WITHOUT ROWID`);
  }

  /** A topic delete marked these partitions deleted (they keep a marker row): a tenant purge must still visit them. */
  retire(incarnation: number, topicId: number, partitions: readonly number[]): void {
    for (const p of partitions) this.sql.exec("INSERT OR IGNORE INTO retired(incarnation, topic_id, partition) VALUES (?,?,?)", incarnation, topicId, p);
  }

  /** The next page of at most `limit` targets after `cursor` (null = from the start). */
  page(cursor: string | null, limit: number): PurgeTargetPage {
    let c: Cursor = cursor ? (JSON.parse(cursor) as Cursor) : { s: 0, i: 0, t: 0, p: 0, g: "" };
    const n = Math.max(1, limit);
    while (c.s < STAGES.length) {
      const r = stagePage(this.sql, STAGES[c.s]!, c, n);
      if (r) return { targets: r.targets, next: JSON.stringify(r.next) };
      c = { s: c.s + 1, i: 0, t: 0, p: 0, g: "" };
    }
    return { targets: [], next: null };
  }

  /** Estimated number of objects the pages will name. */
  totals(): PurgeTotals {
    const one = (q: string) => this.sql.exec<{ n: number | null }>(q).one().n ?? 0;
    return {
      topics: one("SELECT count(*) AS n FROM topics"),
      groups: one("SELECT count(*) AS n FROM topic_groups"),
      partitions: 2 * one("SELECT sum(partitions) AS n FROM topics")
        + one(`SELECT count(*) AS n FROM (SELECT incarnation, topic_id FROM written UNION ALL SELECT incarnation, topic_id FROM retired) AS w
               WHERE NOT EXISTS (SELECT 1 FROM topics WHERE topics.incarnation = w.incarnation AND topics.pair = (w.topic_id + 1) / 2)`)
        + one("SELECT sum(partitions) AS n FROM purges WHERE incarnation < (SELECT v FROM registry_meta WHERE k = 'written_from')"),
    };
  }
}

/** One page of `stage` after `c`, or null when the stage has nothing left. */
function stagePage(sql: SqlStorage, stage: (typeof STAGES)[number], c: Cursor, n: number): { targets: PurgeTarget[]; next: Cursor } | null {
  switch (stage) {
    case "groups": {
      const rows = sql.exec<{ incarnation: number; topic_id: number; name: string }>(
        "SELECT incarnation, topic_id, name FROM topic_groups WHERE (incarnation, topic_id, name) > (?, ?, ?) ORDER BY incarnation, topic_id, name LIMIT ?",
        c.i, c.t, c.g, n).toArray();
      if (rows.length === 0) return null;
      const last = rows[rows.length - 1]!;
      return {
        targets: rows.map((r) => ({ kind: "group", incarnation: r.incarnation, topicId: r.topic_id, group: r.name })),
        next: { ...c, i: last.incarnation, t: last.topic_id, g: last.name },
      };
    }
    case "topics": {
      // c.i = pair, c.t = 0 source / 1 twin, c.p = next partition
      for (let cur = c; ;) {
        const row = sql.exec<{ pair: number; partitions: number; incarnation: number }>(
          "SELECT pair, partitions, incarnation FROM topics WHERE pair >= ? ORDER BY pair LIMIT 1", Math.max(1, cur.i)).toArray()[0];
        if (!row) return null;
        if (row.pair !== cur.i) cur = { ...cur, i: row.pair, t: 0, p: 0 };
        if (cur.p < row.partitions) {
          const end = Math.min(row.partitions, cur.p + n);
          const topicId = 2 * row.pair - 1 + cur.t;
          return {
            targets: range(cur.p, end).map((p) => ({ kind: "partition", incarnation: row.incarnation, topicId, partition: p })),
            next: { ...cur, p: end },
          };
        }
        cur = cur.t === 0 ? { ...cur, t: 1, p: 0 } : { ...cur, i: row.pair + 1, t: 0, p: 0 };
      }
    }
    case "written":
    case "retired": {
      // Partitions of live topics were named by the "topics" stage already.
      const rows = sql.exec<{ incarnation: number; topic_id: number; partition: number }>(
        `SELECT incarnation, topic_id, partition FROM ${stage} AS w WHERE (incarnation, topic_id, partition) > (?, ?, ?)
         AND NOT EXISTS (SELECT 1 FROM topics WHERE topics.incarnation = w.incarnation AND topics.pair = (w.topic_id + 1) / 2)
         ORDER BY incarnation, topic_id, partition LIMIT ?`, c.i, c.t, c.p, n).toArray();
      if (rows.length === 0) return null;
      const first = rows[0]!;
      const same = rows.filter((r) => r.incarnation === first.incarnation && r.topic_id === first.topic_id);
      const last = same[same.length - 1]!;
      return {
        targets: same.map((r) => ({ kind: "partition", incarnation: r.incarnation, topicId: r.topic_id, partition: r.partition })),
        next: { ...c, i: last.incarnation, t: last.topic_id, p: last.partition },
      };
    }
    case "purges": {
      // c.i, c.t = the queued delete's incarnation and topic id, c.p = next partition
      for (let cur = c; ;) {
        // Only deletes of topics from before registration (the others' partitions are in `written`).
        const row = sql.exec<{ incarnation: number; topic_id: number; partitions: number }>(
          `SELECT incarnation, topic_id, partitions FROM purges WHERE (incarnation, topic_id) >= (?, ?)
           AND incarnation < (SELECT v FROM registry_meta WHERE k = 'written_from') ORDER BY incarnation, topic_id LIMIT 1`,
          cur.i, cur.t).toArray()[0];
        if (!row) return null;
        if (row.incarnation !== cur.i || row.topic_id !== cur.t) cur = { ...cur, i: row.incarnation, t: row.topic_id, p: 0 };
        if (cur.p < row.partitions) {
          const end = Math.min(row.partitions, cur.p + n);
          return {
            targets: range(cur.p, end).map((p) => ({ kind: "partition", incarnation: row.incarnation, topicId: row.topic_id, partition: p })),
            next: { ...cur, p: end },
          };
        }
        cur = { ...cur, t: row.topic_id + 1, p: 0 };
      }
    }
  }
}

function range(from: number, to: number): number[] {
  return Array.from({ length: Math.max(0, to - from) }, (_, k) => from + k);
}
