#!/usr/bin/env node
// `npm run bench`: runs every suite in bench/suites (TypeScript, via tsx).
// Usage: npm run bench [-- suiteName ...]
import { register } from "tsx/esm/api";

register();
const { runBenchmarks } = await import("./runner.ts");
await runBenchmarks(process.argv.slice(2));
