#!/usr/bin/env node
// `npm run bench`: runs every suite in bench/suites (TypeScript, via tsx).
// Usage: npm run bench [-- suiteName ...] [--baseline <git rev> [--interleave N]] [--launcher wrangler|miniflare] [--option value ...] (suite options)
import { register } from "tsx/esm/api";

register();
const { parseBenchArgs, runBenchmarks } = await import("./runner.ts");
const { only, baseline, launcher, rounds, options } = parseBenchArgs(process.argv.slice(2));
await runBenchmarks(only, baseline, launcher, options, rounds);
