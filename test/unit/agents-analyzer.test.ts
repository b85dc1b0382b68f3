import { describe, expect, it } from "vitest";
import { cjkBigrams, ftsMatchQuery, indexText, splitCamel, textRuns } from "../../objects/agents/analyzer";
import { embeddingText, ftsColumns } from "../../objects/agents/documents";

describe("analyzer", () => {
  it("splits text into word runs and CJK runs, dropping punctuation", () => {
    expect(textRuns("Pay发票, now！AI助手")).toEqual([
      { cjk: false, text: "Pay" },
      { cjk: true, text: "发票" },
      { cjk: false, text: "now" },
      { cjk: false, text: "AI" },
      { cjk: true, text: "助手" },
    ]);
  });

  it("splits camelCase and digits", () => {
    expect(splitCamel("PayBot2")).toEqual(["Pay", "Bot", "2"]);
    expect(splitCamel("SQLAnalyst")).toEqual(["SQL", "Analyst"]);
    expect(splitCamel("translator")).toEqual(["translator"]);
  });

  it("index text: CJK runs become characters and bigrams, Latin words stay", () => {
    expect(cjkBigrams("付款单")).toEqual(["付款", "款单"]);
    expect(cjkBigrams("税")).toEqual([]);
    expect(indexText("处理付款 for InvoiceBot")).toBe("处 理 付 款 处理 理付 付款 for InvoiceBot Invoice Bot");
  });

  it("match query: OR of quoted terms, stopwords dropped, CJK bigrams, syntax inert", () => {
    expect(ftsMatchQuery("payment and invoice")).toBe('"payment" OR "invoice"');
    expect(ftsMatchQuery("处理付款")).toBe('"处理" OR "理付" OR "付款"');
    expect(ftsMatchQuery("税")).toBe('"税"');
    expect(ftsMatchQuery("the and")).toBe('"the" OR "and"');
    expect(ftsMatchQuery('a"b* NEAR(x')).toBe('"b" OR "near" OR "x"');
    expect(ftsMatchQuery("!!! ...")).toBeNull();
  });

  it("match query: a split word is the word, the phrase of its parts, and its parts of two letters or more", () => {
    expect(ftsMatchQuery("jsokapic1808f89")).toBe('"jsokapic1808f89" OR "jsokapic 1808 f 89" OR "jsokapic"');
    expect(ftsMatchQuery("InvoiceBot")).toBe('"invoicebot" OR "invoice bot" OR "invoice" OR "bot"');
    expect(ftsMatchQuery("PayBot2 x509")).toBe('"paybot2" OR "pay bot 2" OR "pay" OR "bot" OR "x509" OR "x 509"');
    expect(ftsMatchQuery("TheBot")).toBe('"thebot" OR "the bot" OR "bot"');
    expect(ftsMatchQuery("f")).toBe('"f"'); // a one-letter word typed on its own is still searched
  });

  it("documents: FTS columns and embedding text cover name, description and skills", () => {
    const f = { name: "payments-agent", mailbox: null, description: "收款", skillsText: "Refund\nrefunds" };
    expect(ftsColumns(f)).toEqual({ name: "payments agent", description: "收 款 收款", skills: "Refund refunds" });
    expect(embeddingText(f)).toBe("payments agent\n收款\nRefund\nrefunds");
  });
});
