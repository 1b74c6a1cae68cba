/**
 * What is generated from the config schema (src/config/schema.ts) and committed: the JSON Schema for editors and
 * the configuration reference's table (src/config/README.md). Each fails here when the schema changed and `npm run schema` was not run.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

import { loadConfig } from '../../src/config/config.js';
import { DEFAULT_CONFIG } from '../../src/config/defaults.js';
import { CONFIG_KEYS } from '../../src/config/schema.js';
import { configJsonSchemaText, configTable, TABLE_END, TABLE_FILE, TABLE_START, withConfigTable } from '../../src/config/write-schema.js';

const root = new URL('../../', import.meta.url);
const read = (path: string): string => readFileSync(new URL(path, root), 'utf8');

describe('generated from the config schema', () => {
  it('src/config/config.schema.json is the schema\'s JSON Schema (else: npm run schema)', () => {
    expect(read('src/config/config.schema.json')).toBe(configJsonSchemaText());
  });

  it('the configuration reference\'s table is the schema\'s (else: npm run schema)', () => {
    const readme = read(TABLE_FILE);
    expect(readme).toContain(TABLE_START);
    expect(readme).toContain(TABLE_END);
    expect(withConfigTable(readme)).toBe(readme);
  });

  it('the table has one row per key, each with its default and meaning', () => {
    const rows = configTable().split('\n').slice(2);
    expect(rows.map((row) => /^\| `([^`]+)` \|/.exec(row)?.[1])).toEqual(CONFIG_KEYS.map(({ key }) => key));
    expect(rows.find((row) => row.startsWith('| `bus.port` |'))).toBe(
      '| `bus.port` | `8181` | port of the embedded bus server (0 = any free port) (`--port`, `OVOS_CONTESTS_PORT`) |',
    );
  });

  it('the JSON Schema accepts a config file an editor would write: every default, a $schema key, null entries that delete', () => {
    const schema = z.fromJSONSchema(JSON.parse(read('src/config/config.schema.json')) as z.core.JSONSchema.JSONSchema);
    expect(schema.safeParse(JSON.parse(JSON.stringify(DEFAULT_CONFIG))).success).toBe(true);
    const file = { $schema: './config.schema.json', fallback: { stages: { fallback_high: null } }, bus: { port: 0 } };
    expect(schema.safeParse(file).success).toBe(true);
    expect(schema.safeParse({ bus: { prot: 1 } }).success).toBe(false);
    expect(schema.safeParse({ bus: { port: 70_000 } }).success).toBe(false);
    // And the loader reads that same file.
    const loaded = loadConfig({ argv: ['--config', 'c.json'], env: {}, readFile: () => JSON.stringify(file) });
    expect(Object.keys(loaded.config.fallback.stages)).toEqual(['fallback_medium', 'fallback_low']);
  });
});
