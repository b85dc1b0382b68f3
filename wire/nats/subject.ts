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
  // Token by token over both strings without allocating (this runs for every
  // delivered message and subscription).
  const pl = pattern.length;
  const sl = subject.length;
  let pi = 0;
  let si = 0;
  for (;;) {
    let pe = pattern.indexOf(".", pi);
    if (pe < 0) pe = pl;
    const single = pe - pi === 1;
    if (single && pe === pl && pattern.charCodeAt(pi) === 0x3e) return si < sl; // trailing `>`: one or more tokens left
    if (si >= sl) return false; // subject has fewer tokens
    let se = subject.indexOf(".", si);
    if (se < 0) se = sl;
    if (!(single && pattern.charCodeAt(pi) === 0x2a)) {
      if (pe - pi !== se - si) return false;
      for (let k = 0; k < pe - pi; k++) if (pattern.charCodeAt(pi + k) !== subject.charCodeAt(si + k)) return false;
    }
    pi = pe + 1;
    si = se + 1;
    if (pi > pl) return si > sl; // pattern done: the subject must be done too
  }
}

