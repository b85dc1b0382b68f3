/**
 * Whether a SQLite database file holds nothing, read from its bytes (the
 * file format, https://www.sqlite.org/fileformat2.html) without a SQLite
 * library: every b-tree named in its schema (tables, indexes, including
 * SQLite's own `sqlite_sequence` and workerd's `_cf_KV` / `_cf_METADATA`,
 * where a scheduled alarm lives) is an empty leaf page. An empty schema
 * holds nothing either. Pure: the caller hands over the pages it asks for.
 *
 * Conservative: anything this reader does not follow (a schema over more
 * than one page, an overflowing schema row, an unknown page type, a short
 * read) answers "not empty", so a file is only ever judged empty when it
 * certainly is.
 */

/** Reads `length` bytes at byte `offset` of the file (fewer at its end). */
export type ReadAt = (offset: number, length: number) => Promise<Uint8Array>;

const HEADER = "SQLite format 3\0";
/** b-tree page types (byte 0 of a page's b-tree header). */
const LEAF_TABLE = 13;
const LEAF_INDEX = 10;

/** A SQLite varint at `at`: its value (as a Number; schema values are small) and length. */
function varint(b: Uint8Array, at: number): { value: number; len: number } | null {
  let v = 0;
  for (let i = 0; i < 9; i++) {
    const byte = b[at + i];
    if (byte === undefined) return null;
    if (i === 8) return { value: v * 256 + byte, len: 9 };
    v = v * 128 + (byte & 0x7f);
    if ((byte & 0x80) === 0) return { value: v, len: i + 1 };
  }
  return null;
}

/** Byte length of a record column of serial type `t`. */
function serialLength(t: number): number {
  if (t >= 12) return Math.floor((t - (t % 2 === 0 ? 12 : 13)) / 2);
  return [0, 1, 2, 3, 4, 6, 8, 8, 0, 0, 0, 0][t] ?? 0;
}

/** A big-endian integer column of serial type 1–6, 8 (0) or 9 (1); null for other types. */
function intColumn(b: Uint8Array, at: number, t: number): number | null {
  if (t === 8) return 0;
  if (t === 9) return 1;
  if (t < 1 || t > 6) return null;
  let v = 0;
  for (let i = 0; i < serialLength(t); i++) v = v * 256 + b[at + i]!;
  return v;
}

/**
 * The root pages named by the schema rows on page 1 (`page`, the whole
 * first page, b-tree header at byte 100); null when the schema is not one
 * leaf page or a row cannot be read whole.
 */
export function schemaRootPages(page: Uint8Array, usable: number): number[] | null {
  const h = 100;
  if (page[h] !== LEAF_TABLE) return null; // the schema spills over more pages: not followed
  const cells = (page[h + 3]! << 8) | page[h + 4]!;
  const roots: number[] = [];
  for (let c = 0; c < cells; c++) {
    const ptr = (page[h + 8 + 2 * c]! << 8) | page[h + 8 + 2 * c + 1]!;
    const size = varint(page, ptr);
    if (!size || size.value > usable - 35) return null; // overflows onto other pages
    const rowid = varint(page, ptr + size.len);
    if (!rowid) return null;
    const rec = ptr + size.len + rowid.len;
    if (rec + size.value > page.length) return null;
    const hdr = varint(page, rec);
    if (!hdr) return null;
    const types: number[] = [];
    for (let at = rec + hdr.len; at < rec + hdr.value;) {
      const t = varint(page, at);
      if (!t) return null;
      types.push(t.value);
      at += t.len;
    }
    if (types.length < 4) return null;
    let body = rec + hdr.value;
    for (let i = 0; i < 3; i++) body += serialLength(types[i]!); // type, name, tbl_name
    const root = intColumn(page, body, types[3]!);
    if (root === null) return null;
    if (root > 0) roots.push(root); // 0: views, triggers, virtual tables
  }
  return roots;
}

/** True when the b-tree header at `h` of `page` is a leaf with no cells. */
function emptyLeaf(page: Uint8Array, h: number): boolean {
  const type = page[h];
  if (type !== LEAF_TABLE && type !== LEAF_INDEX) return false;
  return page[h + 3] === 0 && page[h + 4] === 0;
}

/**
 * True when the database of `size` bytes read through `read` holds no row
 * in any table or index (see the module comment); false when it holds one
 * or cannot be judged. A file shorter than one page (SQLite writes the
 * first page at once; 0 bytes is a database never written) holds nothing
 * only when it is empty.
 */
export async function sqliteHoldsNothing(size: number, read: ReadAt): Promise<boolean> {
  if (size === 0) return true;
  const head = await read(0, 100);
  if (head.length < 100 || new TextDecoder().decode(head.subarray(0, 16)) !== HEADER) return false;
  const raw = (head[16]! << 8) | head[17]!;
  const pageSize = raw === 1 ? 65536 : raw;
  if (pageSize < 512 || size < pageSize) return false;
  const usable = pageSize - head[20]!;
  const first = await read(0, pageSize);
  if (first.length < pageSize) return false;
  const roots = schemaRootPages(first, usable);
  if (roots === null) return false;
  for (const root of roots) {
    if ((root - 1) * pageSize >= size) return false;
    const page = await read((root - 1) * pageSize, 12);
    if (page.length < 8 || !emptyLeaf(page, 0)) return false;
  }
  return true;
}
