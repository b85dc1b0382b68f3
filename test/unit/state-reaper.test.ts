/**
 * The sweep of object files that hold nothing (client/local/state-reaper.ts,
 * client/local/sqlite-empty.ts) on SQLite files made by the sqlite3 shell
 * (test/fixtures/sqlite/): an empty schema and tables without rows hold
 * nothing; one row anywhere (also SQLite's own autoincrement counter) is
 * something. A file with a `-wal` next to it, or one this process holds
 * open, stays.
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, openSync, closeSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { sqliteHoldsNothing } from "../../client/local/sqlite-empty";
import { reapEmptyObjectFiles } from "../../client/local/state-reaper";

const FIXTURES = join(import.meta.dirname, "../fixtures/sqlite");

/** `sqliteHoldsNothing` of a fixture file. */
function judge(name: string): Promise<boolean> {
  const bytes = readFileSync(join(FIXTURES, name));
  return sqliteHoldsNothing(bytes.length, async (offset, length) => bytes.subarray(offset, offset + length));
}

describe("sqliteHoldsNothing", () => {
  it("is true for an empty schema and for tables and indexes without rows", async () => {
    expect(await judge("empty-schema.sqlite")).toBe(true);
    expect(await judge("empty-tables.sqlite")).toBe(true);
    expect(await sqliteHoldsNothing(0, async () => new Uint8Array())).toBe(true);
  });

  it("is false for a row in any table (also sqlite_sequence) and for what is not a SQLite file", async () => {
    expect(await judge("one-row.sqlite")).toBe(false);
    expect(await judge("sequence.sqlite")).toBe(false);
    const junk = new TextEncoder().encode("not a database".padEnd(4096, "x"));
    expect(await sqliteHoldsNothing(junk.length, async (o, l) => junk.subarray(o, o + l))).toBe(false);
    const cut = readFileSync(join(FIXTURES, "empty-tables.sqlite")).subarray(0, 4096); // root pages missing
    expect(await sqliteHoldsNothing(cut.length, async (o, l) => cut.subarray(o, o + l))).toBe(false);
  });
});

describe("reapEmptyObjectFiles", () => {
  let dir = "";
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("removes object files that hold nothing, and no other", async () => {
    dir = mkdtempSync(join(tmpdir(), "reaper-"));
    const cls = join(dir, "v3", "do", "w-Mailbox");
    mkdirSync(cls, { recursive: true });
    const id = (c: string) => join(cls, `${c.repeat(64)}.sqlite`);
    copyFileSync(join(FIXTURES, "empty-schema.sqlite"), id("a"));
    copyFileSync(join(FIXTURES, "empty-tables.sqlite"), id("b"));
    copyFileSync(join(FIXTURES, "one-row.sqlite"), id("c"));
    copyFileSync(join(FIXTURES, "empty-schema.sqlite"), id("d"));
    writeFileSync(id("d") + "-wal", "x"); // a connection that is, or was not cleanly, closed
    copyFileSync(join(FIXTURES, "empty-schema.sqlite"), id("e"));
    copyFileSync(join(FIXTURES, "empty-schema.sqlite"), join(cls, "metadata.sqlite")); // not an object's file
    const held = openSync(id("e"), "r"); // a live object: this process plays workerd
    try {
      expect(await reapEmptyObjectFiles({ stateDir: dir, runtimePid: process.pid })).toBe(2);
    } finally {
      closeSync(held);
    }
    expect(["a", "b", "c", "d", "e"].map((c) => existsSync(id(c)))).toEqual([false, false, true, true, true]);
    expect(existsSync(join(cls, "metadata.sqlite"))).toBe(true);
    // workerd not running (the sweep at start): nothing is held
    expect(await reapEmptyObjectFiles({ stateDir: dir, runtimePid: undefined })).toBe(1);
    expect(existsSync(id("e"))).toBe(false);
  });
});
