import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { generateMailAddress, isValidMailAddress, mailAddressProblem, assertMailAddress, Mq9Error } from "../../wire/mq9";

// Every example of the spec's mail_address table and the full-address list.
const SPEC_VALID = [
  "task.001", "agent.inbox", "analytics.result", "acme.org.task.queue", "session.20260502",
  "acme.task.queue", "order.processing.urgent", "agent.001.inbox",
];
const SPEC_INVALID: Record<string, string> = {
  "task-001": 'contains "-"',
  "task_001": 'contains "_"',
  "Task.001": "upper-case",
  ".task.001": 'starts with "."',
  "task.001.": 'ends with "."',
  "task..001": 'contains ".."',
};

describe("mail_address validation (spec table)", () => {
  it.each(SPEC_VALID)("accepts %s", (a) => {
    expect(mailAddressProblem(a)).toBeNull();
    expect(isValidMailAddress(a)).toBe(true);
  });
  it.each(Object.entries(SPEC_INVALID))("rejects %s (%s)", (a, why) => {
    expect(mailAddressProblem(a)).toContain(why);
    expect(() => assertMailAddress(a)).toThrow(Mq9Error);
  });
  it("enforces the 1..128 length and rejects percent-encoding", () => {
    expect(isValidMailAddress("")).toBe(false);
    expect(isValidMailAddress("a")).toBe(true);
    expect(isValidMailAddress("a".repeat(128))).toBe(true);
    expect(isValidMailAddress("a".repeat(129))).toBe(false);
    expect(isValidMailAddress("task%2E001")).toBe(false);
    expect(isValidMailAddress("task 001")).toBe(false);
    expect(isValidMailAddress("tâsk")).toBe(false);
  });
  it("agrees with the regular-expression form of the rule", () => {
    const re = /^[a-z0-9](?:[a-z0-9]|\.(?!\.))*$/;
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom("a", "z", "0", "9", ".", "A", "-", "_"), maxLength: 12 }), (s) => {
        const expected = s.length >= 1 && s.length <= 128 && re.test(s) && !s.endsWith(".");
        expect(isValidMailAddress(s)).toBe(expected);
      }),
    );
  });
});

describe("generated addresses", () => {
  it("carry 160 random bits and pass the rules", () => {
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const a = generateMailAddress();
      expect(isValidMailAddress(a)).toBe(true);
      expect(a).toMatch(/^mq9\.[0-9a-f]{40}$/);
      seen.add(a);
    }
    expect(seen.size).toBe(200);
  });
  it("uses every random byte", () => {
    expect(generateMailAddress((b) => b.fill(0xab))).toBe("mq9." + "ab".repeat(20));
    expect(generateMailAddress((b) => b.fill(0))).toBe("mq9." + "0".repeat(40));
  });
});
