/**
 * `npm run schema`: write what is generated from the config schema (schema.ts) — the JSON Schema for editors
 * (src/config/config.schema.json, published as `ovos-contests/config.schema.json`) and the configuration reference's
 * table (src/config/README.md), between its marker comments. A test (test/config/schema-files.test.ts) fails when either drifts.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { isMain } from '../is-main.js';
import { DEFAULT_CONFIG } from './defaults.js';
import { CONFIG_KEYS, configJsonSchema } from './schema.js';

export const TABLE_START = '<!-- config table: generated from src/config/schema.ts by `npm run schema` -->';
export const TABLE_END = '<!-- end of config table -->';

/** The committed JSON Schema's text. */
export function configJsonSchemaText(): string {
  return `${JSON.stringify(configJsonSchema(), null, 2)}\n`;
}

function defaultAt(key: string): unknown {
  let node: unknown = DEFAULT_CONFIG;
  for (const part of key.split('.')) node = (node as Record<string, unknown>)[part];
  return node;
}

const cell = (text: string): string => text.replaceAll('|', '\\|');

/** The configuration reference's table: key | default | meaning (with the flag and environment variable that set it). */
export function configTable(): string {
  const rows = CONFIG_KEYS.map(({ key, description, meta }) => {
    const value = defaultAt(key);
    const shown = meta?.shownDefault ?? `\`${typeof value === 'string' ? value : JSON.stringify(value)}\``;
    const setBy = [
      ...(meta?.flag === undefined ? [] : [`\`${meta.flag.name}\``, `\`${meta.flag.env}\``]),
      ...(meta?.switches ?? []).map((option) => `\`${option.flag}\``),
    ];
    const meaning = setBy.length === 0 ? description : `${description} (${setBy.join(', ')})`;
    return `| \`${key}\` | ${cell(shown)} | ${cell(meaning)} |`;
  });
  return ['| key | default | meaning |', '| --- | --- | --- |', ...rows].join('\n');
}

/** The file holding the table, from the repository root. */
export const TABLE_FILE = 'src/config/README.md';

/** `readme` with the text between the table markers replaced by the generated table. */
export function withConfigTable(readme: string): string {
  const start = readme.indexOf(TABLE_START);
  const end = readme.indexOf(TABLE_END);
  if (start === -1 || end < start) throw new Error(`${TABLE_FILE} has no "${TABLE_START}" … "${TABLE_END}" markers`);
  return `${readme.slice(0, start + TABLE_START.length)}\n${configTable()}\n${readme.slice(end)}`;
}

if (isMain(import.meta.url)) {
  // Run from dist/src/config/ (npm run schema) or src/config/: the repository is above either.
  const root = fileURLToPath(new URL(import.meta.url.includes('/dist/') ? '../../../' : '../../', import.meta.url));
  writeFileSync(`${root}src/config/config.schema.json`, configJsonSchemaText());
  process.stdout.write('wrote src/config/config.schema.json\n');
  writeFileSync(`${root}${TABLE_FILE}`, withConfigTable(readFileSync(`${root}${TABLE_FILE}`, 'utf8')));
  process.stdout.write(`wrote the configuration table in ${TABLE_FILE}\n`);
}
