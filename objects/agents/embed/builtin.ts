/**
 * The built-in offline embedder: feature hashing of
 * - English words (lower-cased, lightly stemmed, stopwords dropped),
 * - character trigrams of those words (small weight: spelling variants),
 * - Chinese/Japanese/Korean character bigrams and (small weight) characters,
 * - bilingual concepts from lexicon.ts (large weight: the only bridge
 *   between an English query and a Chinese card, and between paraphrases),
 * each with sublinear term frequency (1 + ln tf), hashed with a sign bit
 * into DIM dimensions and L2-normalized. Deterministic and corpus-free, so
 * a vector never needs recomputing while the id stays the same.
 *
 * What it cannot do: understand words that are neither shared with the card
 * nor in the lexicon (an English query matches a Chinese-only card only
 * through lexicon concepts). docs/agents.md says so.
 */
import { cjkBigrams, ENGLISH_STOPWORDS, splitCamel, textRuns } from "../analyzer";
import { CONCEPTS, type Concept } from "./lexicon";
import type { Embedder } from "./types";

/** Vector dimension of the built-in embedder. */
export const BUILTIN_DIM = 1024;

/** Identifier stored with its vectors; bump the version when features or lexicon change. */
export const BUILTIN_EMBEDDER_ID = `builtin:hashed-ngram-concepts-v1/${BUILTIN_DIM}`;

/** Feature weights (before sublinear tf). */
const W = { concept: 2.5, word: 1.0, trigram: 0.25, bigram: 1.0, char: 0.3 } as const;

/** Words that say nothing about what an agent does (every card has them). */
const GENERIC_EN = new Set(
  "agent agents assistant assistants bot bots service services tool tools help helps helper helpful smart ai automatic automatically able using use uses based via also any all more most some such other new just like get gets want need needs".split(" "),
);
/** Chinese bigrams with the same role as GENERIC_EN / stopwords. */
const GENERIC_ZH_BIGRAMS = new Set(
  "智能 助手 代理 服务 帮助 帮我 一个 可以 支持 提供 用于 进行 我们 你们 能够 自动 请帮 如何 什么 怎么 需要 这个 那个 以及 并且 或者 根据 相关 功能 我想 想要 给我 一下 哪个 有没 没有 能帮 谁能".split(" "),
);
/** Chinese function characters dropped as single-character features. */
const GENERIC_ZH_CHARS = new Set([..."的了和与及并或在是把将为我你他她它们这那个吗呢吧啊请帮给让对从到中上下一有也都就要会能可以"]);

/** Words the plural rule must not touch. */
const STEM_EXCEPTIONS = new Set(["news", "series", "species", "business", "analysis", "always", "status", "alias", "ups"]);

/**
 * Light English stemmer (plural, -ing, -ed, double consonant, final e):
 * "payments"→"payment", "billing"→"bill", "schedules"/"scheduling"→"schedul".
 * Only used inside the built-in embedder.
 */
export function stem(word: string): string {
  let s = word.toLowerCase();
  if (s.length <= 3 || STEM_EXCEPTIONS.has(s)) return s;
  if (s.endsWith("ies") && s.length > 4) s = s.slice(0, -3) + "y";
  else if (s.endsWith("sses")) s = s.slice(0, -2);
  else if (s.endsWith("s") && !/(ss|us|is)$/.test(s)) s = s.slice(0, -1);
  if (s.endsWith("ing") && s.length > 5) s = s.slice(0, -3);
  else if (s.endsWith("ed") && s.length > 4) s = s.slice(0, -2);
  if (/([^aeiouslz])\1$/.test(s)) s = s.slice(0, -1);
  if (s.endsWith("e") && s.length > 4) s = s.slice(0, -1);
  return s;
}

/** One English lexicon term, compiled: a sequence of word matchers. */
type WordMatcher = (lower: string, stemmed: string) => boolean;
interface CompiledConcept {
  id: string;
  weight: number;
  en: WordMatcher[][];
  zh: string[];
}

function compileWord(term: string): WordMatcher {
  if (term.endsWith("*")) {
    const prefix = term.slice(0, -1);
    return (lower) => lower.startsWith(prefix);
  }
  const target = stem(term);
  return (_lower, stemmed) => stemmed === target;
}

const COMPILED: CompiledConcept[] = CONCEPTS.map((c: Concept) => ({
  id: c.id,
  weight: c.weight ?? 1,
  en: c.en.map((t) => t.split(" ").map(compileWord)),
  zh: c.zh,
}));

const CONCEPT_WEIGHT = new Map(COMPILED.map((c) => [`c:${c.id}`, c.weight]));

/**
 * Term frequency of each feature of one text. Feature strings are
 * `c:<concept>`, `w:<stem>`, `g:<trigram>`, `b:<cjk bigram>`, `u:<cjk char>`.
 */
export function textFeatures(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  const add = (f: string) => counts.set(f, (counts.get(f) ?? 0) + 1);
  const words: { lower: string; stemmed: string }[] = [];
  const cjk: string[] = [];
  for (const run of textRuns(text)) {
    if (run.cjk) {
      cjk.push(run.text);
      for (const b of cjkBigrams(run.text)) if (!GENERIC_ZH_BIGRAMS.has(b)) add(`b:${b}`);
      for (const ch of run.text) if (!GENERIC_ZH_CHARS.has(ch)) add(`u:${ch}`);
      continue;
    }
    for (const part of splitCamel(run.text)) {
      const lower = part.toLowerCase();
      words.push({ lower, stemmed: stem(lower) });
    }
  }
  for (const w of words) {
    if (ENGLISH_STOPWORDS.has(w.lower) || GENERIC_EN.has(w.lower) || /^\p{N}+$/u.test(w.lower)) continue;
    add(`w:${w.stemmed}`);
    const padded = `<${w.stemmed}>`;
    for (let i = 0; i + 3 <= padded.length; i++) add(`g:${padded.slice(i, i + 3)}`);
  }
  const joined = cjk.join("|");
  for (const c of COMPILED) {
    let n = 0;
    for (const seq of c.en) {
      for (let i = 0; i + seq.length <= words.length; i++) {
        if (seq.every((m, k) => m(words[i + k].lower, words[i + k].stemmed))) n++;
      }
    }
    for (const term of c.zh) n += countOccurrences(joined, term);
    if (n > 0) counts.set(`c:${c.id}`, n);
  }
  return counts;
}

/** The built-in embedding of one text: a unit vector of BUILTIN_DIM (all zeros for a text with no features). */
export function builtinEmbed(text: string): Float32Array {
  const v = new Float32Array(BUILTIN_DIM);
  for (const [feature, tf] of textFeatures(text)) {
    const h = fnv1a(feature);
    v[h & (BUILTIN_DIM - 1)] += (h >>> 31 ? -1 : 1) * featureWeight(feature) * (1 + Math.log(tf));
  }
  let norm = 0;
  for (const x of v) norm += x * x;
  if (norm > 0) {
    const inv = 1 / Math.sqrt(norm);
    for (let i = 0; i < v.length; i++) v[i] *= inv;
  }
  return v;
}

/** The built-in embedder (synchronous work behind the async interface). */
export function createBuiltinEmbedder(): Embedder {
  return {
    id: BUILTIN_EMBEDDER_ID,
    kind: "builtin",
    minScore: 0.02,
    async embed(texts) {
      return texts.map(builtinEmbed);
    },
  };
}

function featureWeight(feature: string): number {
  switch (feature[0]) {
    case "c":
      return W.concept * (CONCEPT_WEIGHT.get(feature) ?? 1);
    case "w":
      return W.word;
    case "g":
      return W.trigram;
    case "b":
      return W.bigram;
    default:
      return W.char;
  }
}

function countOccurrences(haystack: string, needle: string): number {
  let n = 0;
  for (let i = haystack.indexOf(needle); i >= 0; i = haystack.indexOf(needle, i + needle.length)) n++;
  return n;
}

/** 32-bit FNV-1a over UTF-16 code units. */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
