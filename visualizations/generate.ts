/**
 * `npm run viz`: regenerate the diagrams in this folder from the machines — per machine a Mermaid `.md` and an SVG
 * laid out by Graphviz's `dot`, here Graphviz compiled to WebAssembly (`@hpcc-js/wasm-graphviz`), so `npm install`
 * is all a machine needs. A test (test/inspect/diagram.test.ts) renders every machine again and fails when a
 * committed diagram differs from it by a byte.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
// Pinned to an exact version in package.json (no caret): the SVG bytes depend on the Graphviz release inside it
// (layout, number formatting, its version comment). The WebAssembly build measures text with Graphviz's built-in
// font metrics, never the system's fonts, so one version draws the same bytes on every machine, and the drift test
// can compare them exactly. Moving to another version means running `npm run viz` and committing the new SVGs.
import { Graphviz } from '@hpcc-js/wasm-graphviz';
import { dotOf, MACHINES, markdownOf } from './diagrams.js';

const here = fileURLToPath(new URL('.', import.meta.url)).replace(/\/dist\/visualizations\/$/, '/visualizations/');

let graphviz: Promise<Graphviz> | undefined;

/** The SVG Graphviz's `dot` layout draws from the DOT `source` (the WebAssembly module is compiled on first use). */
export async function renderSvg(source: string): Promise<string> {
  graphviz ??= Graphviz.load();
  return (await graphviz).dot(source, 'svg');
}

if (import.meta.url === new URL(`file://${process.argv[1] ?? ''}`).href) {
  for (const name of Object.keys(MACHINES)) {
    writeFileSync(`${here}${name}.machine.md`, markdownOf(name));
    process.stdout.write(`wrote visualizations/${name}.machine.md\n`);
    try {
      writeFileSync(`${here}${name}.machine.svg`, await renderSvg(dotOf(name)));
      process.stdout.write(`wrote visualizations/${name}.machine.svg\n`);
    } catch (error) {
      process.stderr.write(`cannot render ${name}.machine.svg: ${(error as Error).message}\n`);
      process.exitCode = 1;
    }
  }
}
