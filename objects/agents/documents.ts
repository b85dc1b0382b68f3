/**
 * What the registry indexes for one card: the FTS5 columns and the text
 * given to the embedder. Both cover the same parts of the card: name,
 * description, and every skill's name, description, tags and examples.
 */
import type { AgentCardFields } from "../../wire/mq9/agent-requests";
import { indexText, splitCamel, textRuns } from "./analyzer";

/** FTS5 columns of one card (segmented text, see analyzer.ts). */
export interface FtsColumns {
  name: string;
  description: string;
  skills: string;
}

/** The FTS5 row of a card. */
export function ftsColumns(f: AgentCardFields): FtsColumns {
  return { name: indexText(f.name), description: indexText(f.description), skills: indexText(f.skillsText) };
}

/**
 * The text embedded for a card: its name with separators and camelCase
 * turned into spaces ("payments-agent" → "payments agent"), description and
 * skills, one per line.
 */
export function embeddingText(f: AgentCardFields): string {
  const name = textRuns(f.name)
    .flatMap((r) => (r.cjk ? [r.text] : splitCamel(r.text)))
    .join(" ");
  return [name, f.description, f.skillsText].filter((x) => x.trim() !== "").join("\n");
}
