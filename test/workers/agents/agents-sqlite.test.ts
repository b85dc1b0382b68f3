/**
 * What workerd's SQLite offers the agent registry: FTS5 with the porter,
 * unicode61 and trigram tokenizers and bm25(). Also pins down WHY the
 * registry segments CJK text itself: trigram cannot match the two-character
 * words most Chinese queries consist of.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../../objects/env";
import { indexText } from "../../../objects/agents/analyzer";

const agents = (env as unknown as Env).AGENTS;

function scratch(name: string) {
  return agents.get(agents.idFromName(`sqlite-probe/${name}/${Date.now()}`));
}

describe("FTS5 in workerd's SQLite", () => {
  it("has the porter, unicode61 and trigram tokenizers and ranks with bm25", async () => {
    await runInDurableObject(scratch("tokenizers"), async (_obj, state) => {
      const sql = state.storage.sql;
      for (const [i, tok] of ["trigram", "unicode61 remove_diacritics 2", "porter unicode61"].entries()) {
        sql.exec(`CREATE VIRTUAL TABLE probe_${i} USING fts5(body, tokenize = '${tok}')`);
      }
      sql.exec("INSERT INTO probe_2 (rowid, body) VALUES (1, 'Creates invoices and collects payments'), (2, 'Weather forecasts'), (3, 'invoice invoice invoice templates')");
      const rows = sql.exec<{ rowid: number; s: number }>("SELECT rowid, bm25(probe_2) AS s FROM probe_2 WHERE probe_2 MATCH ? ORDER BY s", '"invoice" OR "payment"').toArray();
      expect(rows.map((r) => r.rowid)).toEqual([1, 3]); // porter: "invoices" ~ "invoice"; 1 matches both terms
      expect(rows[0].s).toBeLessThan(0); // bm25() is negative: smaller = better
    });
  });

  it("trigram matches 3+ character substrings but not two-character Chinese words", async () => {
    await runInDurableObject(scratch("trigram"), async (_obj, state) => {
      const sql = state.storage.sql;
      sql.exec("CREATE VIRTUAL TABLE tri USING fts5(body, tokenize = 'trigram')");
      sql.exec("INSERT INTO tri (rowid, body) VALUES (1, '处理付款并生成发票'), (2, 'weather forecast')");
      const match = (q: string) => sql.exec<{ rowid: number }>("SELECT rowid FROM tri WHERE tri MATCH ?", q).toArray().map((r) => r.rowid);
      expect(match('"付款并"')).toEqual([1]);
      expect(match('"eather"')).toEqual([2]);
      expect(match('"付款"')).toEqual([]); // the limitation
      expect(match('"发票"')).toEqual([]);
    });
  });

  it("unicode61 over CJK-segmented text matches one- and two-character Chinese queries", async () => {
    await runInDurableObject(scratch("segmented"), async (_obj, state) => {
      const sql = state.storage.sql;
      sql.exec("CREATE VIRTUAL TABLE seg USING fts5(body, tokenize = 'porter unicode61 remove_diacritics 2')");
      sql.exec("INSERT INTO seg (rowid, body) VALUES (1, ?), (2, ?)", indexText("处理付款并生成发票"), indexText("天气预报 weather"));
      const match = (q: string) => sql.exec<{ rowid: number }>("SELECT rowid FROM seg WHERE seg MATCH ?", q).toArray().map((r) => r.rowid);
      expect(match('"付款"')).toEqual([1]);
      expect(match('"票"')).toEqual([1]);
      expect(match('"天气" AND "weather"')).toEqual([2]);
      expect(match('"气付"')).toEqual([]);
    });
  });
});
