/**
 * Renders docs/errors.md from the error registry (pure; no I/O). Written by
 * `npm run docs:errors` (client/scripts/gen-errors-doc.ts) and compared by a
 * unit test, so the document cannot drift from the table in errors.ts.
 */
import { CLIENT_ACTIONS, ERROR_REGISTRY, ERROR_SEGMENTS, SPEC_ERROR_COUNT, formatErrorCode, type ClientAction } from "./errors";

const cell = (s: string) => s.replace(/\|/g, "\\|");

/** The whole docs/errors.md text (ends with a newline). */
export function renderErrorsMarkdown(): string {
  const out: string[] = [
    "# MortarMQ v0 error codes",
    "",
    "<!-- Generated from wire/mortar/errors.ts by `npm run docs:errors`. Do not edit by hand: a unit test fails when this file and the registry differ. -->",
    "",
    `The registry holds ${ERROR_REGISTRY.length} codes in four segments: the ${SPEC_ERROR_COUNT} of spec §3 and ` +
      `${ERROR_REGISTRY.length - SPEC_ERROR_COUNT} added by compatible extensions (marked "extension"; see [protocol.md](protocol.md#extensions)). ` +
      "Codes outside these segments are reserved. Codes are only ever added; a published code never changes meaning and is never reused (spec §4). " +
      "0x000a and 0x000b (BACKPRESSURE / QUOTA_EXCEEDED in drafts, now 0x4001 / 0x4002) stay unassigned.",
    "",
    "An ERR frame carries `code:u16, request_op:u8, message_len:u16, message` (at most 512 bytes of UTF-8). " +
      "\"Closes\" = the broker closes the connection after sending it (the stream cannot continue).",
    "",
    "## Client actions",
    "",
    "| action | what the client does |",
    "|---|---|",
  ];
  for (const [action, text] of Object.entries(CLIENT_ACTIONS) as [ClientAction, string][]) {
    out.push(`| \`${action}\` | ${cell(text)} |`);
  }
  for (const seg of ERROR_SEGMENTS) {
    const rows = ERROR_REGISTRY.filter((e) => e.code >= seg.first && e.code <= seg.last);
    out.push(
      "",
      `## ${formatErrorCode(seg.first)}–${formatErrorCode(seg.last)} ${seg.name} (${rows.length} codes)`,
      "",
      "| code | name | meaning | client action | closes |",
      "|---|---|---|---|---|",
    );
    for (const e of rows) {
      const ext = e.extension ? ` (extension: ${e.extension})` : "";
      out.push(`| ${formatErrorCode(e.code)} | \`${e.name}\` | ${cell(e.meaning)}${ext} | \`${e.action}\` | ${e.closes ? "yes" : "no"} |`);
    }
  }
  return out.join("\n") + "\n";
}
