import { describe, expect, it } from "vitest";
import { MAX_BOUND_VALUES, encodeTags, planInserts as plan, statementCount, type PlainRow } from "../../objects/mailbox/insert-store";

const toBuffer = (b: Uint8Array) => b.slice().buffer;
const planInserts = (first: number, rows: readonly PlainRow[], createMs: number) => plan(first, rows, createMs, toBuffer);

const buf = (...b: number[]) => new Uint8Array(b);
const row = (over: Partial<PlainRow> = {}): PlainRow => ({ lane: 2, tags: [], payload: buf(7), expiresMs: null, replyTo: null, correlationId: null, ...over });

describe("insert-store: multi-row INSERTs binding only what differs between rows", () => {
  it("rows that differ only in payload: NULL literals, one shared lane, the payloads, msg_id and size from the SQL", () => {
    const p = [buf(1), buf(2, 3), buf()];
    const [st, ...rest] = planInserts(10, p.map((payload) => row({ payload })), 555);
    expect(rest).toEqual([]);
    expect(st!.args).toEqual([10, 555, 2, ...p.map(toBuffer)]);
    expect(st!.sql).toBe(
      "INSERT INTO messages (msg_id, lane, key, tags, payload, size, create_ms, expires_ms, reply_to, correlation_id) VALUES " +
        "(?1 + 0, ?3, NULL, NULL, ?4, length(?4), ?2, NULL, NULL, NULL), (?1 + 1, ?3, NULL, NULL, ?5, length(?5), ?2, NULL, NULL, NULL), " +
        "(?1 + 2, ?3, NULL, NULL, ?6, length(?6), ?2, NULL, NULL, NULL)",
    );
  });

  it("a column that differs is bound per row; one all rows share once", () => {
    const rows = [row({ lane: 0, tags: ["a"], replyTo: "r" }), row({ lane: 1, tags: ["a"], replyTo: null })];
    const [st] = planInserts(0, rows, 1);
    expect(st!.args).toEqual([0, 1, ",a,", 0, toBuffer(rows[0]!.payload), "r", 1, toBuffer(rows[1]!.payload), null]);
    expect(st!.sql).toContain("(?1 + 0, ?4, NULL, ?3, ?5, length(?5), ?2, NULL, ?6, NULL), (?1 + 1, ?7, NULL, ?3, ?8, length(?8), ?2, NULL, ?9, NULL)");
  });

  it("splits a run so that no statement binds more than MAX_BOUND_VALUES, in order, each numbering from its own first id", () => {
    const distinct = Array.from({ length: 40 }, (_, i) => row({ lane: i % 3, tags: [`t${i}`], payload: buf(i), expiresMs: i, replyTo: `r${i}`, correlationId: `c${i}` }));
    const sts = planInserts(100, distinct, 9);
    expect(sts.length).toBe(statementCount(distinct));
    expect(sts.length).toBe(3); // 6 values a row: 16 rows a statement
    for (const st of sts) expect(st.args.length).toBeLessThanOrEqual(MAX_BOUND_VALUES);
    expect(sts.map((s) => s.args[0])).toEqual([100, 116, 132]);
    const plain = Array.from({ length: 200 }, () => row());
    expect(statementCount(plain)).toBe(3); // 97 rows a statement
    for (const st of planInserts(0, plain, 0)) expect(st.args.length).toBeLessThanOrEqual(MAX_BOUND_VALUES);
    expect(planInserts(0, [], 0)).toEqual([]);
    expect(encodeTags(["a", "b"])).toBe(",a,b,");
    expect(encodeTags([])).toBeNull();
  });
});
