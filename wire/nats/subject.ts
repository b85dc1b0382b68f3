/**
 * NATS subjects: validation and wildcard matching, with nats-server's rules
 * (server/sublist.go). A subject is `.`-separated non-empty tokens without
 * whitespace; in a subscription, a token that is exactly `*` matches one
 * token and a last token that is exactly `>` matches one or more tokens.
 * `foo*` or `a>b` are ordinary literal tokens.
 */

/** What {@link scan} found: not a valid subject, valid with a wildcard token, valid without. */
const INVALID = 0;
const WILDCARD = 1;
const LITERAL = 2;

/**
 * One pass over `subject` (this runs for every PUB): tokens non-empty,
 * no whitespace (space, tab, CR, LF, FF), no NUL or U+FFFD, `>` only as the
 * last token. Tells whether a token is exactly `*` or `>`.
 */
function scan(subject: string): number {
  const n = subject.length;
  if (n === 0) return INVALID;
  let wildcard = false;
  let start = 0; // first index of the current token
  for (let i = 0; i <= n; i++) {
    const c = i < n ? subject.charCodeAt(i) : 0x2e; // the end closes the last token like a dot
    if (c === 0x2e) {
      const len = i - start;
      if (len === 0) return INVALID;
      if (len === 1) {
        const t = subject.charCodeAt(start);
        if (t === 0x3e) {
          if (i !== n) return INVALID; // `>` before the last token
          wildcard = true;
        } else if (t === 0x2a) wildcard = true;
      }
      start = i + 1;
    } else if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d || c === 0x0c || c === 0x00 || c === 0xfffd) {
      return INVALID;
    }
  }
  return wildcard ? WILDCARD : LITERAL;
}

/** True if `subject` may be subscribed to (wildcards allowed; `>` only as the last token). */
export function isValidSubject(subject: string): boolean {
  return scan(subject) !== INVALID;
}

/** True if `subject` may be published to: valid and without wildcard tokens. */
export function isValidPublishSubject(subject: string): boolean {
  return scan(subject) === LITERAL;
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

