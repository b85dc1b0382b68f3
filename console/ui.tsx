/** Small shared pieces of the console's pages: polling, status lines, tables. */
import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import { ApiError } from "./api";
import { count, plural, preview } from "./format";

/** Calls `load` now and every `ms` (0 = once) while mounted; re-runs when `deps` change. */
export function usePoll<T>(load: () => Promise<T>, ms: number, deps: unknown[] = []): { data: T | null; error: string | null; reload: () => void } {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = async () => {
      try {
        const d = await load();
        if (live) {
          setData(d);
          setError(null);
        }
      } catch (e) {
        if (live) setError(message(e));
      }
      if (live && ms > 0) timer = setTimeout(run, ms);
    };
    void run();
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [...deps, tick]);
  return { data, error, reload: () => setTick((t) => t + 1) };
}

/** The text of an error for the page. */
export function message(e: unknown): string {
  if (e instanceof ApiError) return `${e.message} (HTTP ${e.status})`;
  return e instanceof Error ? e.message : String(e);
}

/** A status line announced to screen readers. */
export function Status({ error, children }: { error?: string | null; children?: ComponentChildren }) {
  if (error) return <p class="error" role="alert">{error}</p>;
  return children ? <p class="status" role="status">{children}</p> : null;
}

/**
 * A table with a caption and column headers; numeric columns right-aligned.
 * `long`: columns of unbounded text (payloads, URLs) that may break
 * anywhere — the others break only between words, so a long value never
 * squeezes them to a character per line. `foot`: a totals row.
 */
export function Table({ caption, head, rows, numeric = [], long = [], foot }: {
  caption: string; head: string[]; rows: ComponentChildren[][]; numeric?: number[]; long?: number[]; foot?: ComponentChildren[];
}) {
  const cls = (i: number) => [numeric.includes(i) ? "num" : "", long.includes(i) ? "long" : ""].join(" ").trim() || undefined;
  return (
    <div class="table-wrap" tabIndex={0} role="region" aria-label={caption}>
      <table>
        <caption>{caption}</caption>
        <thead>
          <tr>{head.map((h, i) => <th scope="col" class={numeric.includes(i) ? "num" : undefined}>{h}</th>)}</tr>
        </thead>
        <tbody>
          {rows.length === 0
            ? <tr><td colSpan={head.length} class="empty">none</td></tr>
            : rows.map((r) => <tr>{r.map((c, i) => <td class={cls(i)}>{c}</td>)}</tr>)}
        </tbody>
        {foot && <tfoot><tr>{foot.map((c, i) => (i === 0 ? <th scope="row">{c}</th> : <td class={cls(i)}>{c}</td>))}</tr></tfoot>}
      </table>
    </div>
  );
}

/** Characters of a long text shown before its "Show all" button. */
export const PREVIEW_CHARS = 160;

/** Text that may be very long (a payload): its first PREVIEW_CHARS characters and a button to show all of it (and back). */
export function LongText({ text, label }: { text: string; label: string }) {
  const [all, setAll] = useState(false);
  const head = preview(text, PREVIEW_CHARS);
  if (head === null) return <span class="long-text">{text}</span>;
  return (
    <span class="long-text">
      {all ? text : `${head}…`}{" "}
      <button type="button" class="link" aria-expanded={all} aria-label={`${all ? "Show less of" : "Show all of"} ${label} (${plural(text.length, "character")})`}
        onClick={() => setAll(!all)}>{all ? "show less" : `show all ${count(text.length)}`}</button>
    </span>
  );
}

/** Runs an action with a pending flag and its error/success message. */
export function useAction(): { busy: boolean; note: string | null; error: string | null; run: (fn: () => Promise<string>) => Promise<void> } {
  const [busy, setBusy] = useState(false);
  const [note, setNote] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  return {
    busy, note, error,
    run: async (fn) => {
      setBusy(true);
      setError(null);
      setNote(null);
      try {
        setNote(await fn());
      } catch (e) {
        setError(message(e));
      } finally {
        setBusy(false);
      }
    },
  };
}

/** A prefix filter with cursor pages (`after=`): the query string of the current page, and moving between pages. */
export function usePages(limit: number): { prefix: string; setPrefix: (p: string) => void; page: number; query: string; after: string | null;
  prev: (() => void) | null; next: (cursor: string | null) => (() => void) | null } {
  const [prefix, setPrefixState] = useState("");
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const after = cursors.at(-1) ?? null;
  const q = new URLSearchParams({ limit: String(limit) });
  if (prefix) q.set("prefix", prefix);
  if (after) q.set("after", after);
  return {
    prefix, page: cursors.length, query: q.toString(), after,
    setPrefix: (p) => { setPrefixState(p); setCursors([null]); },
    prev: cursors.length > 1 ? () => setCursors(cursors.slice(0, -1)) : null,
    next: (cursor) => (cursor ? () => setCursors([...cursors, cursor]) : null),
  };
}

/** Previous / next page buttons for usePages. */
export function Pager({ label, prev, next }: { label: string; prev: (() => void) | null; next: (() => void) | null }) {
  return (
    <nav class="pager" aria-label={label}>
      <button disabled={!prev} onClick={() => prev?.()}>Previous page</button>
      <button disabled={!next} onClick={() => next?.()}>Next page</button>
    </nav>
  );
}
