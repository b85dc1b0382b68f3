import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isValidPublishSubject, isValidSubject, subjectMatches } from "../../wire/nats/subject";

describe("NATS subject validation", () => {
  it.each([
    ["foo", true, true],
    ["foo.bar.baz", true, true],
    ["$mq9.AI.MSG.SEND.task.001", true, true],
    ["_INBOX.abc.*", true, false],
    ["foo.>", true, false],
    [">", true, false],
    ["*", true, false],
    ["foo.*.bar", true, false],
    ["foo*.bar", true, true], // `foo*` is a literal token
    ["a>b", true, true],
    ["foo.>.bar", false, false], // `>` only last
    ["", false, false],
    ["foo..bar", false, false],
    [".foo", false, false],
    ["foo.", false, false],
    ["foo bar", false, false],
    ["foo\tbar", false, false],
    ["foo\u0000bar", false, false],
    ["foo\uFFFDbar", false, false],
    ["foo\rbar", false, false],
    ["foo\nbar", false, false],
    ["foo\fbar", false, false],
    ["foo.\u00e9t\u00e9", true, true],
    ["*.>", true, false],
    ["foo.>.", false, false],
  ])("%j: subscribe %s, publish %s", (subject, sub, pub) => {
    expect(isValidSubject(subject)).toBe(sub);
    expect(isValidPublishSubject(subject)).toBe(pub);
  });

  /** nats-server's rules written the plain way (split into tokens), to check the one-pass scan against. */
  const reference = (subject: string): { sub: boolean; pub: boolean } => {
    if (subject.length === 0 || subject.includes("\u0000") || subject.includes("\uFFFD")) return { sub: false, pub: false };
    const tokens = subject.split(".");
    const ok = tokens.every((t, i) => t.length > 0 && !/[ \t\n\r\f]/.test(t) && (t !== ">" || i === tokens.length - 1));
    return { sub: ok, pub: ok && !tokens.some((t) => t === "*" || t === ">") };
  };

  it("agrees with the token-by-token rules on arbitrary subjects", () => {
    const char = fc.constantFrom("a", "b", ".", "*", ">", " ", "\t", "\n", "\r", "\f", "\u0000", "\uFFFD", "\u00e9", "$", "_");
    fc.assert(fc.property(fc.array(char, { maxLength: 12 }).map((cs) => cs.join("")), (subject) => {
      expect({ sub: isValidSubject(subject), pub: isValidPublishSubject(subject) }).toEqual(reference(subject));
    }), { numRuns: 5000 });
  });
});

describe("NATS wildcard matching", () => {
  it.each([
    ["foo", "foo", true],
    ["foo", "foo.bar", false],
    ["foo.bar", "foo", false],
    ["foo.*", "foo.bar", true],
    ["foo.*", "foo", false],
    ["foo.*", "foo.bar.baz", false],
    ["*.bar", "foo.bar", true],
    ["*.*", "a.b", true],
    ["*", "a", true],
    ["*", "a.b", false],
    ["foo.>", "foo.bar", true],
    ["foo.>", "foo.bar.baz.qux", true],
    ["foo.>", "foo", false], // `>` needs at least one token
    [">", "a", true],
    [">", "a.b.c", true],
    ["foo.*.>", "foo.x.y", true],
    ["foo.*.>", "foo.x", false],
    ["_INBOX.abc.*", "_INBOX.abc.7", true],
    ["_INBOX.abc.*", "_INBOX.abd.7", false],
    ["_INBOX.abc.*", "_INBOX.abc.7.8", false],
    ["foo*", "foo", false], // literal token, not a prefix wildcard
    ["foo*", "foo*", true],
    ["a.*", "a.*", true], // a `*` token in the subject matches as a token
    ["FOO", "foo", false], // case-sensitive
  ])("%j ~ %j = %s", (pattern, subject, expected) => {
    expect(subjectMatches(pattern, subject)).toBe(expected);
  });
});

/** The straightforward split-based matcher, as a reference for the allocation-free one. */
function referenceMatches(pattern: string, subject: string): boolean {
  if (pattern === subject) return true;
  const p = pattern.split(".");
  const s = subject.split(".");
  for (let i = 0; i < p.length; i++) {
    if (p[i] === ">" && i === p.length - 1) return s.length > i;
    if (i >= s.length) return false;
    if (p[i] !== "*" && p[i] !== s[i]) return false;
  }
  return p.length === s.length;
}

describe("subjectMatches (property)", () => {
  it("agrees with the split-based reference on valid patterns and subjects", () => {
    const token = fc.constantFrom("a", "b", "ab", "*", ">", "foo", "_INBOX");
    const literal = fc.constantFrom("a", "b", "ab", "foo", "_INBOX", "x*");
    const pattern = fc.array(token, { minLength: 1, maxLength: 5 }).map((t) => t.join(".")).filter(isValidSubject);
    const subject = fc.array(literal, { minLength: 1, maxLength: 6 }).map((t) => t.join("."));
    fc.assert(fc.property(pattern, subject, (p, s) => subjectMatches(p, s) === referenceMatches(p, s)), { numRuns: 2000 });
  });
});
