import { describe, expect, it } from "vitest";
import { CHUNK_JSON_CHARS, CHUNK_PAYLOAD_BYTES, chunkBounds, encodeTags, insertChunks, type PlainRow } from "../../objects/mailbox/insert-rows";

const row = (over: Partial<PlainRow> = {}): PlainRow => ({ lane: 2, tags: [], payload: new Uint8Array([7]), expiresMs: null, replyTo: null, correlationId: null, ...over });

describe("insert-rows: plain messages as one JSON array and one payload blob per chunk", () => {
  it("one chunk for a pipelined run: the rows' small columns as JSON, payloads back to back with 1-based offsets", () => {
    const rows = [row(), row({ lane: 0, tags: ["a", "b"], payload: new Uint8Array([1, 2, 3]), expiresMs: 99, replyTo: "r", correlationId: 'q"\\' }), row({ payload: new Uint8Array(0) })];
    const [c, ...rest] = insertChunks(rows);
    expect(rest).toEqual([]);
    expect(c!.first).toBe(0);
    expect(c!.count).toBe(3);
    expect([...c!.payloads]).toEqual([7, 1, 2, 3]);
    expect(JSON.parse(c!.json)).toEqual([
      [2, null, 1, 1, null, null, null],
      [0, ",a,b,", 2, 3, 99, "r", 'q"\\'],
      [2, null, 5, 0, null, null, null],
    ]);
  });

  it("cuts before a row that would pass a chunk's payload bytes; a row larger than that goes alone", () => {
    const half = row({ payload: new Uint8Array(CHUNK_PAYLOAD_BYTES / 2) });
    const huge = row({ payload: new Uint8Array(CHUNK_PAYLOAD_BYTES + 1) });
    expect(chunkBounds([half, half, row(), half])).toEqual([[0, 2], [2, 4]]);
    expect(chunkBounds([row(), huge, row()])).toEqual([[0, 1], [1, 2], [2, 3]]);
    const chunks = insertChunks([half, half, row(), half]);
    expect(chunks.map((c) => [c.first, c.count, c.payloads.byteLength])).toEqual([[0, 2, CHUNK_PAYLOAD_BYTES], [2, 2, 1 + CHUNK_PAYLOAD_BYTES / 2]]);
    expect(JSON.parse(chunks[1]!.json).map((r: number[]) => r[2])).toEqual([1, 2]); // offsets start again in each chunk
  });

  it("cuts by a bound of the JSON length too, which is never below the real length", () => {
    const text = "\u0001".repeat(1000); // escaped as \u0001: 6 characters each
    const r = row({ replyTo: text, correlationId: text, tags: [text] });
    const bounds = chunkBounds(Array.from({ length: 400 }, () => r));
    expect(bounds.length).toBeGreaterThan(1);
    for (const c of insertChunks(Array.from({ length: 400 }, () => r))) expect(c.json.length).toBeLessThanOrEqual(CHUNK_JSON_CHARS);
    expect(chunkBounds([])).toEqual([]);
  });

  it("encodeTags: commas around every tag, null without tags", () => {
    expect(encodeTags(["a", "b"])).toBe(",a,b,");
    expect(encodeTags([])).toBeNull();
  });
});
