// Makes the next incremental Stryker run test mutants again that it would otherwise take from its incremental file:
//   node test/mutation/forget.mjs <incremental file> [--timeouts]
// removes the survivors and the mutants without coverage (with --timeouts, the timeouts too) from that file.
// Why: Stryker keeps a static mutant's "survived" as long as the one test it recorded as covering it is unchanged, so
// tests added since are never run against it; and a timeout measured while the machine did other work is no evidence.
import { readFileSync, writeFileSync } from 'node:fs';

const [file, ...flags] = process.argv.slice(2);
if (file === undefined) {
  console.error('usage: node test/mutation/forget.mjs <incremental file> [--timeouts]');
  process.exit(2);
}
const forget = new Set(['Survived', 'NoCoverage', ...(flags.includes('--timeouts') ? ['Timeout'] : [])]);
const report = JSON.parse(readFileSync(file, 'utf8'));
let dropped = 0;
for (const entry of Object.values(report.files)) {
  const before = entry.mutants.length;
  entry.mutants = entry.mutants.filter((mutant) => !forget.has(mutant.status));
  dropped += before - entry.mutants.length;
}
writeFileSync(file, JSON.stringify(report));
console.log(`${file}: ${dropped} mutants (${[...forget].join(', ')}) will be tested again`);
