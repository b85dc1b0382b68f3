/** client/local/process-tree.ts: a broker's process tree is killed whole (wrangler's workerd children included). */
import { execFileSync, spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { killTree, processTree, running } from "../../client/local/process-tree";

/** Running (a killed process whose new parent has not reaped it yet is a zombie: not running). */
const alive = (pid: number) => {
  try {
    return !execFileSync("ps", ["-o", "stat=", "-p", String(pid)], { encoding: "utf8" }).trim().startsWith("Z");
  } catch {
    return false; // ps exits 1: no such process
  }
};

describe("killTree", () => {
  it("kills a process and the child it started (killing the parent alone would leave the child running)", async () => {
    // a parent that starts a long-running child and prints its pid, like wrangler starting workerd
    const parent = spawn(process.execPath, ["-e", `
      const c = require("node:child_process").spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
      console.log(c.pid);
      setInterval(() => {}, 1000);
    `], { stdio: ["ignore", "pipe", "ignore"] });
    const childPid = await new Promise<number>((resolve) => parent.stdout!.once("data", (d) => resolve(Number.parseInt(String(d), 10))));
    expect(processTree(parent.pid!)).toEqual([parent.pid, childPid]);
    const exited = new Promise((r) => parent.once("exit", r));
    killTree(parent.pid!);
    await exited;
    for (let i = 0; i < 50 && alive(childPid); i++) await new Promise((r) => setTimeout(r, 20));
    expect(alive(childPid)).toBe(false);
  });
});

describe("running", () => {
  it("is false for a zombie (exited, never reaped by its parent), true for a live process", async () => {
    // sh starts a child that exits at once, then becomes `sleep`, which never reaps it: a zombie
    const parent = spawn("sh", ["-c", "sleep 0 & echo $!; exec sleep 5"], { stdio: ["ignore", "pipe", "ignore"] });
    const zombie = await new Promise<number>((resolve) => parent.stdout!.once("data", (d) => resolve(Number.parseInt(String(d), 10))));
    for (let i = 0; i < 100 && alive(zombie); i++) await new Promise((r) => setTimeout(r, 20));
    expect(alive(zombie)).toBe(false); // ps: state Z
    expect(running(zombie)).toBe(false);
    expect(running(parent.pid!)).toBe(true);
    parent.kill("SIGKILL");
  });
});
