#!/usr/bin/env node
// `npm run bench`: runs every suite in bench/suites (TypeScript, via tsx).
// Usage: npm run bench [-- [--launcher wrangler|miniflare] suiteName ...]
import { register } from "tsx/esm/api";

register();
const { runBenchmarks } = await import("./runner.ts");
await runBenchmarks(process.argv.slice(2));
