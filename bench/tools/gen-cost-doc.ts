/**
 * Rewrites docs/operations.md "What it costs" from the recorded bill and
 * census runs (bench/results/bill.json, census.json): `npx tsx bench/tools/gen-cost-doc.ts`
 * after `npm run bench -- bill` / `census`. See bench/bill/doc.ts.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { renderCostSection, replaceCostSection, type BillRecord, type CensusRecord } from "../bill/doc";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const read = <T>(p: string) => JSON.parse(readFileSync(resolve(root, p), "utf8")) as T;
const page = resolve(root, "docs/operations.md");
const block = renderCostSection(read<BillRecord>("bench/results/bill.json"), read<CensusRecord>("bench/results/census.json"));
writeFileSync(page, replaceCostSection(readFileSync(page, "utf8"), block));
console.log(`wrote the cost section of ${page}`);
