/**
 * `npm run diagrams`: regenerate the Mermaid diagrams in this folder from the machines. A test
 * (test/inspect/diagram.test.ts) fails when a committed diagram no longer matches its machine.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { diagrams } from './diagrams.js';

const here = fileURLToPath(new URL('.', import.meta.url)).replace(/\/dist\/visualizations\/$/, '/visualizations/');
for (const [file, text] of Object.entries(diagrams())) {
  writeFileSync(`${here}${file}`, text);
  process.stdout.write(`wrote visualizations/${file}\n`);
}
