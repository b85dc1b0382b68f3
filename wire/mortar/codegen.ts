/**
 * Renders codec.gen.ts — size, encode and decode of every layout in
 * layouts.ts as straight-line TypeScript (pure: returns the file's text).
 * Written by `npm run gen:codec` (client/scripts/gen-codec.ts) and
 * compared by a unit test, so the tables are the only place a layout is
 * stated.
 *
 * Frames get three switches over the op (payloadLength, writePayload,
 * readPayload) reading and writing through cursor.ts's Writer and Reader;
 * each OK result layout (fixed-width fields only) gets size<Op>Result,
 * write<Op>Result and read<Op>Result at fixed offsets of a DataView.
 */
import { FRAME_LAYOUTS, KIND_BYTES, RESULT_LAYOUTS, fixedBytes, tailBytes, type AnyLayout, type Kind } from "./layouts";

/** `topicId` → `topic_id`: the spec's name of a field. */
export function wireName(key: string): string {
  return key.replace(/[A-Z]/g, (c) => "_" + c.toLowerCase());
}

/** `CONTROL_ACK` → `ControlAck`. */
const pascal = (op: string) => op.toLowerCase().replace(/(^|_)([a-z])/g, (_, __, c: string) => c.toUpperCase());
const hex = (n: number) => "0x" + n.toString(16).padStart(4, "0");

/** The size of `o` (variable name) under layout `l`, as an expression. */
function sizeExpr(l: AnyLayout, o: string): string {
  const parts = [String(fixedBytes(l.fields))];
  for (const [key, kind] of l.fields) {
    if (kind === "bytes16" || kind === "bytes32") parts.push(`${o}.${key}.length`);
    else if (kind === "u64s16") parts.push(`8 * ${o}.${key}.length`);
  }
  const t = l.tail;
  if (t) parts.push(`(${o}.flags & ${hex(flagOf(t))} ? ${tailBytes(l)} : 0)`);
  return parts.join(" + ");
}

function writeLines(fields: AnyLayout["fields"], o: string, indent: string): string[] {
  return fields.map(([key, kind]) => `${indent}w.${kind}(${o}.${key}, "${wireName(key)}");`);
}

/** A frame's tail is announced by a bit of its `flags` (spec §4). */
function flagOf(t: NonNullable<AnyLayout["tail"]>): number {
  if (!t.flag) throw new TypeError(`frame tail ${t.name}: a frame's tail needs its flags bit (spec §4)`);
  return t.flag;
}

/** Statements writing `o` under `l` (the tail checked against its flags bit). */
function writeBody(l: AnyLayout, o: string, what: string, indent: string): string[] {
  const lines = writeLines(l.fields, o, indent);
  const t = l.tail;
  if (!t) return lines;
  const tail = writeLines(t.fields, "t", indent + "  ");
  const flag = hex(flagOf(t));
  return [
    ...lines,
    `${indent}const t = ${o}.${t.name};`,
    `${indent}if (${o}.flags & ${flag}) {`,
    `${indent}  if (!t) throw new RangeError("${what} flags bit ${flag} set without the ${t.name} tail");`,
    ...tail,
    `${indent}} else if (t) {`,
    `${indent}  throw new RangeError("${what} ${t.name} tail given without flags bit ${flag}");`,
    `${indent}}`,
  ];
}

function readProps(fields: AnyLayout["fields"], head: string[] = []): string {
  return `{ ${[...head, ...fields.map(([key, kind]: readonly [string, Kind]) => `${key}: r.${kind}("${wireName(key)}")`)].join(", ")} }`;
}

/** Statements reading a frame of type `type` under `l` (`head`: properties before the fields) and returning it. */
function readBody(l: AnyLayout, type: string, indent: string, head: string[]): string[] {
  const t = l.tail;
  if (!t) return [`${indent}return r.done(${readProps(l.fields, head)});`];
  return [
    `${indent}const o: ${type} = ${readProps(l.fields, head)};`,
    `${indent}if (o.flags & ${hex(flagOf(t))}) o.${t.name} = ${readProps(t.fields)};`,
    `${indent}return r.done(o);`,
  ];
}

/** The text of codec.gen.ts. */
export function renderCodecModule(): string {
  const frames = Object.entries(FRAME_LAYOUTS) as [string, AnyLayout][];
  const results = Object.entries(RESULT_LAYOUTS) as [string, AnyLayout][];
  const out: string[] = [
    "// Generated from wire/mortar/layouts.ts by `npm run gen:codec` (wire/mortar/codegen.ts). Do not edit by hand:",
    "// a unit test fails when this file and the tables differ.",
    'import { Op } from "./constants";',
    'import { u16, u32, u64, u8, type Reader, type Writer } from "./cursor";',
    'import type { Frame, FrameOf } from "./frames";',
    `import type { ${results.map(([op]) => `${pascal(op)}Result`).join(", ")} } from "./results";`,
    "",
    "/** Payload bytes of `f` after the op byte (the frame's `length` − 1). @throws RangeError for an op without a layout */",
    "export function payloadLength(f: Frame): number {",
    "  switch (f.op) {",
    ...frames.map(([op, l]) => `    case Op.${op}: return ${sizeExpr(l, "f")};`),
    "    default: throw new RangeError(`cannot encode op ${(f as { op: unknown }).op}`);",
    "  }",
    "}",
    "",
    "/** Writes the payload of `f` (after the op byte). @throws RangeError when a field does not fit, or a tail and its flags bit disagree */",
    "export function writePayload(w: Writer, f: Frame): void {",
    "  switch (f.op) {",
  ];
  for (const [op, l] of frames) {
    const body = writeBody(l, "f", op, "      ");
    out.push(`    case Op.${op}:${l.tail ? " {" : ""}`, ...body, "      return;");
    if (l.tail) out.push("    }");
  }
  out.push(
    "  }",
    "}",
    "",
    "/** Reads the payload of a frame of op `op`. @throws MortarError MALFORMED_PAYLOAD when it does not fit the layout */",
    "export function readPayload(r: Reader, op: number): Frame {",
    "  switch (op) {",
  );
  for (const [op, l] of frames) {
    if (l.tail) out.push(`    case Op.${op}: {`, ...readBody(l, `FrameOf<typeof Op.${op}>`, "      ", [`op: Op.${op}`]), "    }");
    else out.push(`    case Op.${op}:`, ...readBody(l, "", "      ", [`op: Op.${op}`]));
  }
  out.push('    default: throw r.fail("op without a layout");', "  }", "}");
  for (const [op, l] of results) out.push(...renderResult(op, l));
  return out.join("\n") + "\n";
}

const GET: Partial<Record<Kind, string>> = { u8: "Uint8", u16: "Uint16", u32: "Uint32", u64: "BigUint64" };

/** `[statement or property, offset]` per field of a fixed-width field list starting at `at`. */
function offsets(fields: AnyLayout["fields"], at: number): { key: string; kind: Kind; at: number }[] {
  return fields.map(([key, kind]) => {
    const f = { key, kind, at };
    at += KIND_BYTES[kind];
    return f;
  });
}

/**
 * Size, write and read of one OK result layout: fixed-width fields at
 * fixed offsets (the caller checked the size), and a tail present when
 * the object has it or the bytes are there.
 */
function renderResult(op: string, l: AnyLayout): string[] {
  const type = `${pascal(op)}Result`;
  const all = [...l.fields, ...(l.tail?.fields ?? [])];
  if (all.some(([, kind]) => !GET[kind]) || l.tail?.flag) throw new TypeError(`${op} result: only fixed-width fields and an unflagged tail`);
  const head = offsets(l.fields, 0);
  const fixed = fixedBytes(l.fields);
  const tail = l.tail ? offsets(l.tail.fields, fixed) : [];
  const set = (o: string, indent: string) => (f: { key: string; kind: Kind; at: number }) =>
    `${indent}v.set${GET[f.kind]}(${f.at}, ${f.kind}(${o}.${f.key}, "${wireName(f.key)}"));`;
  const get = (fs: typeof head) => `{ ${fs.map((f) => `${f.key}: v.get${GET[f.kind]}(${f.at})`).join(", ")} }`;
  const t = l.tail;
  return [
    "",
    `/** Bytes of a ${op} OK result. */`,
    `export function size${type}(${t ? "o" : "_o"}: ${type}): number {`,
    `  return ${t ? `${fixed} + (o.${t.name} ? ${tailBytes(l)} : 0)` : fixed};`,
    "}",
    "",
    `/** Writes a ${op} OK result into \`v\` (sized by size${type}). @throws RangeError when a field does not fit */`,
    `export function write${type}(v: DataView, o: ${type}): void {`,
    ...head.map(set("o", "  ")),
    ...(t ? [`  const t = o.${t.name};`, "  if (t) {", ...tail.map(set("t", "    ")), "  }"] : []),
    "}",
    "",
    `/** Reads a ${op} OK result from \`v\` (its size checked by the caller: with the tail when longer than ${fixed} bytes). */`,
    `export function read${type}(v: DataView): ${type} {`,
    ...(t
      ? [`  const o: ${type} = ${get(head)};`, `  if (v.byteLength > ${fixed}) o.${t.name} = ${get(tail)};`, "  return o;"]
      : [`  return ${get(head)};`]),
    "}",
  ];
}
