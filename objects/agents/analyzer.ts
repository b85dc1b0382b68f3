/**
 * Text analysis shared by the full-text index and the built-in embedder.
 * Pure (no platform imports).
 *
 * Chinese (and Japanese/Korean) text has no spaces, and SQLite's trigram
 * tokenizer cannot match the 1–2 character words that most Chinese queries
 * are made of (付款, 发票, 天气). So CJK runs are segmented here, in the
 * classic CJK-bigram way (as Lucene's CJKAnalyzer): every character and
 * every overlapping pair of characters becomes a token. Latin text keeps
 * its words (camelCase and snake_case split); FTS5's `porter unicode61`
 * tokenizer then lower-cases, strips diacritics and stems them, so
 * "payments" matches "payment". See docs/agents.md (full-text search).
 */

const CJK = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u;
const WORD_RUN = /[\p{L}\p{N}]+/gu;
const CJK_SPLIT = /([\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]+)/u;

/** One run of text: a Latin/other word or a CJK run (no spaces inside). */
export interface TextRun {
  cjk: boolean;
  text: string;
}

/** Splits text into word runs and CJK runs (letters/digits only; punctuation dropped). */
export function textRuns(text: string): TextRun[] {
  const out: TextRun[] = [];
  for (const m of text.normalize("NFKC").matchAll(WORD_RUN)) {
    for (const part of m[0].split(CJK_SPLIT)) {
      if (part === "") continue;
      out.push({ cjk: CJK.test(part), text: part });
    }
  }
  return out;
}

/** Splits a Latin word at camelCase and letter/digit boundaries: "PayBot2" → ["Pay", "Bot", "2"]. */
export function splitCamel(word: string): string[] {
  return word.match(/\p{Lu}+(?!\p{Ll})|\p{Lu}?\p{Ll}+|\p{N}+|[^\p{Lu}\p{Ll}\p{N}]+/gu) ?? [word];
}

/** Overlapping character pairs of a CJK run (empty for a single character). */
export function cjkBigrams(run: string): string[] {
  const chars = [...run];
  const out: string[] = [];
  for (let i = 0; i + 1 < chars.length; i++) out.push(chars[i] + chars[i + 1]);
  return out;
}

/**
 * The text stored in the FTS5 index for one field: Latin words (plus their
 * camelCase parts), and for CJK runs every character and every bigram,
 * space separated. Index and query go through the same segmentation.
 */
export function indexText(text: string): string {
  const tokens: string[] = [];
  for (const run of textRuns(text)) {
    if (run.cjk) {
      // loops, not spread: a CJK run can be a whole 64 KiB card, past the call-argument limit
      for (const ch of run.text) tokens.push(ch);
      for (const bigram of cjkBigrams(run.text)) tokens.push(bigram);
    } else {
      tokens.push(run.text);
      const parts = splitCamel(run.text);
      if (parts.length > 1) for (const part of parts) tokens.push(part);
    }
  }
  return tokens.join(" ");
}

/** Common English function words, dropped from full-text queries (they would match nearly every card). */
export const ENGLISH_STOPWORDS: ReadonlySet<string> = new Set(
  (
    "a an and are as at be but by can could do does for from have how i in into is it its me my of on or our " +
    "please that the their them then there these this those to us was we were what when where which who will " +
    "with would you your"
  ).split(" "),
);

/**
 * The FTS5 MATCH expression for a DISCOVER `text` query, or null when the
 * query has no searchable token. Terms are OR-ed (BM25 ranks cards that
 * match more and rarer terms first); each is a quoted string, so FTS5
 * query syntax in user input is inert. A CJK run of one character searches
 * that character; longer runs search their bigrams. English stopwords are
 * dropped unless nothing else is left.
 *
 * A Latin word that splits into parts (camelCase, letter/digit boundaries:
 * `jsokapic1808f89` → jsokapic 1808 f 89) is searched as the whole word,
 * as the phrase of its parts (the index holds both, so the phrase finds the
 * same compound written apart, `build 1808` for `build1808`, and adds
 * weight to a card that has it), and as those parts that are words of two
 * letters or more. A part of one character or of digits only never matches
 * alone: `f` or `89` split off an identifier says nothing about a card
 * (docs/agents.md, full-text search).
 */
export function ftsMatchQuery(query: string): string | null {
  const terms: string[] = [];
  const stop: string[] = [];
  for (const run of textRuns(query)) {
    if (run.cjk) {
      const chars = [...run.text];
      for (const term of chars.length === 1 ? chars : cjkBigrams(run.text)) terms.push(term);
      continue;
    }
    (ENGLISH_STOPWORDS.has(run.text.toLowerCase()) ? stop : terms).push(run.text);
    const parts = splitCamel(run.text);
    if (parts.length < 2) continue;
    terms.push(parts.join(" "));
    for (const p of parts) if (matchesAlone(p) && !ENGLISH_STOPWORDS.has(p.toLowerCase())) terms.push(p);
  }
  const chosen = terms.length > 0 ? terms : stop;
  const unique = [...new Set(chosen.map((t) => t.toLowerCase()))];
  if (unique.length === 0) return null;
  return unique.map((t) => `"${t.replaceAll('"', '""')}"`).join(" OR ");
}

/** A part of a split word that may match on its own: two characters or more, not digits only. */
function matchesAlone(part: string): boolean {
  return [...part].length >= 2 && !/^\p{N}+$/u.test(part);
}
