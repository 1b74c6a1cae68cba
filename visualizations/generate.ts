/**
 * `npm run viz`: regenerate the diagrams in this folder from the machines — per machine a Mermaid `.md` and an SVG
 * rendered offline by Graphviz `dot` (Debian package `graphviz`), which carries the hash of its DOT source. A test
 * (test/inspect/diagram.test.ts) fails when a committed diagram no longer matches its machine.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dotHash, dotOf, MACHINES, markdownOf } from './diagrams.js';

const here = fileURLToPath(new URL('.', import.meta.url)).replace(/\/dist\/visualizations\/$/, '/visualizations/');

/** `dot -Tsvg` on `source`, with the source's hash as a comment after the XML prolog. */
export function renderSvg(source: string): string {
  const svg = execFileSync('dot', ['-Tsvg'], { input: source, encoding: 'utf8' });
  return svg.replace(/(<svg[\s>])/, `<!-- dot-source-sha256: ${dotHash(source)} -->\n$1`);
}

if (import.meta.url === new URL(`file://${process.argv[1] ?? ''}`).href) {
  for (const name of Object.keys(MACHINES)) {
    writeFileSync(`${here}${name}.machine.md`, markdownOf(name));
    process.stdout.write(`wrote visualizations/${name}.machine.md\n`);
    try {
      writeFileSync(`${here}${name}.machine.svg`, renderSvg(dotOf(name)));
      process.stdout.write(`wrote visualizations/${name}.machine.svg\n`);
    } catch (error) {
      process.stderr.write(`cannot render ${name}.machine.svg: ${(error as Error).message} (install Graphviz: apt-get install graphviz)\n`);
      process.exitCode = 1;
    }
  }
}
