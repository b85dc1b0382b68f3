import { describe, expect, it } from "vitest";
import { MAX_CARD_BYTES, MAX_JSON_DEPTH } from "../../wire/mq9/agent-limits";
import { jsonNestingDepth, mailboxKey, parseDiscoverRequest, parseRegisterRequest, parseReportRequest, parseUnregisterRequest } from "../../wire/mq9/agent-requests";
import { Mq9Error } from "../../wire/mq9/errors";

const b = (v: unknown) => new TextEncoder().encode(typeof v === "string" ? v : JSON.stringify(v));

describe("agent request bodies", () => {
  it("REGISTER keeps the raw text and extracts name, mailbox, description and skills", () => {
    const raw = '{"name":"t","mailbox":"mq9://broker/a.inbox","description":"d","skills":[{"name":"s","description":"sd","tags":["x"],"examples":["e"]},{"id":"only"}],"extra":1}';
    expect(parseRegisterRequest(b(raw))).toEqual({
      cardJson: raw,
      fields: { name: "t", mailbox: "mq9://broker/a.inbox", description: "d", skillsText: "s\nsd\nx\ne" },
    });
    expect(parseRegisterRequest(b({ name: "t", mailbox: " ", description: null })).fields).toEqual({ name: "t", mailbox: null, description: "", skillsText: "" });
  });

  it("REGISTER errors are Mq9Error(bad_request)", () => {
    const err = (v: unknown) => {
      try {
        parseRegisterRequest(typeof v === "object" && v instanceof Uint8Array ? v : b(v));
      } catch (e) {
        expect(e).toBeInstanceOf(Mq9Error);
        expect((e as Mq9Error).code).toBe("bad_request");
        return (e as Error).message;
      }
      throw new Error("no error");
    };
    expect(err({})).toMatch(/name is required/);
    expect(err("nope")).toMatch(/not valid JSON/);
    expect(err('"a string"')).toBe("agent card must be a JSON object");
    expect(err({ name: "x", description: 5 })).toMatch(/description/);
    expect(err(new Uint8Array(MAX_CARD_BYTES + 1))).toMatch(/exceeds the limit/);
  });

  it("REGISTER and REPORT refuse JSON nested deeper than MAX_JSON_DEPTH; brackets inside strings do not count", () => {
    expect(jsonNestingDepth('{"a":[{"b":"[[[{{\\"]]"}],"c":{}}')).toBe(3);
    const nested = (levels: number) => `{"name":"a","x":${"[".repeat(levels - 1)}${"]".repeat(levels - 1)}}`;
    expect(jsonNestingDepth(nested(MAX_JSON_DEPTH))).toBe(MAX_JSON_DEPTH);
    expect(parseRegisterRequest(b(nested(MAX_JSON_DEPTH))).fields.name).toBe("a");
    expect(() => parseRegisterRequest(b(nested(MAX_JSON_DEPTH + 1)))).toThrow(`agent card nests objects/arrays deeper than ${MAX_JSON_DEPTH} levels`);
    expect(parseReportRequest(b(nested(MAX_JSON_DEPTH))).selector.name).toBe("a");
    expect(() => parseReportRequest(b(nested(MAX_JSON_DEPTH + 1)))).toThrow(`report nests objects/arrays deeper than ${MAX_JSON_DEPTH} levels`);
    expect(parseRegisterRequest(b({ name: "a", description: "[".repeat(1000) })).fields.name).toBe("a");
  });

  it("UNREGISTER / REPORT need name or mailbox; REPORT keeps its body verbatim", () => {
    expect(parseUnregisterRequest(b({ mailbox: "m" }))).toEqual({ name: null, mailbox: "m" });
    expect(() => parseUnregisterRequest(b({}))).toThrow("UNREGISTER needs the agent's name or mailbox");
    expect(() => parseUnregisterRequest(b({ name: "" }))).toThrow(/name/);
    const raw = '{"name":"a","status":{"load":1}}';
    expect(parseReportRequest(b(raw))).toEqual({ selector: { name: "a", mailbox: null }, bodyJson: raw });
  });

  it("DISCOVER: semantic wins, blank queries are absent, limit default 20 clamped to 100, page from 1", () => {
    expect(parseDiscoverRequest(b(""))).toEqual({ mode: "all", query: "", limit: 20, page: 1 });
    expect(parseDiscoverRequest(b({ text: "a", semantic: "b" }))).toEqual({ mode: "semantic", query: "b", limit: 20, page: 1 });
    expect(parseDiscoverRequest(b({ text: "a", semantic: "  ", limit: 500, page: 3 }))).toEqual({ mode: "text", query: "a", limit: 100, page: 3 });
    expect(parseDiscoverRequest(b({ text: null }))).toMatchObject({ mode: "all" });
    expect(() => parseDiscoverRequest(b({ page: 0 }))).toThrow(/page/);
    // huge numbers are clamped, never rejected with the float-safety bound
    expect(parseDiscoverRequest(b({ limit: 2 ** 64, page: 2 ** 64 }))).toEqual({ mode: "all", query: "", limit: 100, page: 10_001 });
    expect(() => parseDiscoverRequest(b({ page: 0 }))).toThrow("field page: must be a whole number ≥ 1");
    expect(() => parseDiscoverRequest(b({ text: "x".repeat(1001) }))).toThrow(/text/);
  });

  it("mailboxKey strips mq9://host/", () => {
    expect(mailboxKey("mq9://broker/agent.translator.inbox")).toBe("agent.translator.inbox");
    expect(mailboxKey("agent.translator.inbox")).toBe("agent.translator.inbox");
    expect(mailboxKey("https://x/y")).toBe("https://x/y");
  });
});
