/**
 * The console keeps serving while dist/console/ is rebuilt under a running
 * local broker (client/scripts/build-console.ts writes in place, one atomic
 * rename per file; docs/console.md "Building"): a test run, wrangler's
 * `[build]` or a manual build next to `npm start` must not leave /console
 * answering 503. Workerd's asset service holds the directory it found at
 * start, so a build that replaced the directory broke it until a restart.
 */
import { describe, expect, it } from "vitest";
import { buildConsole } from "../../client/scripts/build-console";
import { useLocalBroker } from "../fixtures/e2e-broker";

const ctx = useLocalBroker("console-rebuild");

async function status(path: string): Promise<number> {
  const res = await fetch(ctx.broker.url + path);
  await res.arrayBuffer();
  return res.status;
}

describe("console rebuilt under a running broker", () => {
  it("/console and its bundle answer 200 during and after rebuilds", async () => {
    const page = await (await fetch(`${ctx.broker.url}/console`)).text();
    const bundles = [...page.matchAll(/\/console\/assets\/(app-[A-Za-z0-9_-]+\.(?:js|css))/g)].map((m) => m[0]);
    expect(bundles).toHaveLength(2);
    const seen: Record<string, number[]> = {};
    let stop = false;
    const poll = (async () => {
      while (!stop) {
        for (const p of ["/console", ...bundles]) (seen[p] ??= []).push(await status(p));
      }
    })();
    for (let i = 0; i < 5; i++) await buildConsole();
    stop = true;
    await poll;
    for (const [p, statuses] of Object.entries(seen)) expect([p, [...new Set(statuses)]]).toEqual([p, [200]]);
    for (const p of ["/console", ...bundles]) expect([p, await status(p)]).toEqual([p, 200]);
  });
});
