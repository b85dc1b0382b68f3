/**
 * NATS subjects: validation and wildcard matching, with nats-server's rules
 * (server/sublist.go). A subject is `.`-separated non-empty tokens without
 * whitespace; in a subscription, a token that is exactly `*` matches one
 * token and a last token that is exactly `>` matches one or more tokens.
 * `foo*` or `a>b` are ordinary literal tokens.
 */

const WHITESPACE = /[ \t\n\r\f]/;

function tokensValid(subject: string): string[] | null {
  if (subject.length === 0) return null;
  if (subject.includes("\u0000") || subject.includes("\uFFFD")) return null;
  const tokens = subject.split(".");
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    if (t.length === 0 || WHITESPACE.test(t)) return null;
    if (t === ">" && i !== tokens.length - 1) return null;
  }
  return tokens;
}

/** True if `subject` may be subscribed to (wildcards allowed; `>` only as the last token). */
export function isValidSubject(subject: string): boolean {
  return tokensValid(subject) !== null;
}

/** True if `subject` may be published to: valid and without wildcard tokens. */
export function isValidPublishSubject(subject: string): boolean {
  const tokens = tokensValid(subject);
  return tokens !== null && !tokens.some((t) => t === "*" || t === ">");
}

/**
 * True if the literal `subject` matches the subscription `pattern`
 * (`*` = exactly one token, trailing `>` = one or more tokens). Both are
 * assumed valid (check with {@link isValidSubject} / {@link isValidPublishSubject}).
 */
export function subjectMatches(pattern: string, subject: string): boolean {
  if (pattern === subject) return true; // `*` and `>` also match themselves as tokens
  const p = pattern.split(".");
  const s = subject.split(".");
  for (let i = 0; i < p.length; i++) {
    const t = p[i];
    if (t === ">" && i === p.length - 1) return s.length > i;
    if (i >= s.length) return false;
    if (t === "*") continue;
    if (t !== s[i]) return false;
  }
  return p.length === s.length;
}

