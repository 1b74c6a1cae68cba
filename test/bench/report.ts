/**
 * The suite's output: each benchmark returns a `Section` (typed rows plus notes and OK/FAIL checks); this file
 * prints sections as aligned text tables and writes the whole run, with the machine it ran on and the commit
 * measured, as JSON.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, arch, platform, release, totalmem } from 'node:os';
import type { LoadResult } from './load-driver.js';
import { formatBytes, formatCount, formatMs, round, summarize } from './stats.js';

export type Cell = number | string | boolean | null;

export interface Column {
  readonly key: string;
  readonly header: string;
  /** How a number prints: milliseconds, a count, bytes, or as is. */
  readonly unit: 'ms' | 'count' | 'bytes' | 'text';
}

export interface Check {
  readonly name: string;
  readonly ok: boolean;
  readonly detail: string;
}

export interface Section {
  readonly id: string;
  readonly title: string;
  /** What was run, exactly (counts, concurrency, config values): written to the JSON as is. */
  readonly params: Readonly<Record<string, unknown>>;
  readonly columns: readonly Column[];
  readonly rows: ReadonlyArray<Readonly<Record<string, Cell>>>;
  readonly notes: readonly string[];
  readonly checks: readonly Check[];
}

export interface MachineInfo {
  readonly node: string;
  readonly v8: string;
  readonly platform: string;
  readonly arch: string;
  readonly osRelease: string;
  readonly cpus: number;
  readonly cpuModel: string;
  readonly totalMemoryBytes: number;
  readonly date: string;
}

export function machineInfo(): MachineInfo {
  const list = cpus();
  return {
    node: process.version,
    v8: process.versions.v8,
    platform: platform(),
    arch: arch(),
    osRelease: release(),
    cpus: list.length,
    cpuModel: list[0]?.model.trim() ?? 'unknown',
    totalMemoryBytes: totalmem(),
    date: new Date().toISOString(),
  };
}

/** What a results file holds (test/bench/results/*.json): one run of `npm run bench`. */
export interface Results {
  /** The code measured: `git rev-parse --short HEAD`, with `-dirty` when tracked files had uncommitted changes. */
  readonly commit?: string;
  readonly machine: MachineInfo;
  readonly command: string;
  readonly wallSeconds: number;
  readonly sections: readonly Section[];
  readonly failures: readonly string[];
}

/** HEAD's short hash, `-dirty` when a tracked file differs from it; undefined where there is no git or no repository. */
export function gitCommit(cwd = new URL('.', import.meta.url)): string | undefined {
  const git = (...args: string[]): string => execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  try {
    const head = git('rev-parse', '--short', 'HEAD');
    return git('status', '--porcelain', '--untracked-files=no') === '' ? head : `${head}-dirty`;
  } catch {
    return undefined;
  }
}

/** A cell as the tables print it: milliseconds, counts and bytes formatted by their column's unit, `—` for none. */
export function formatCell(value: Cell | undefined, unit: Column['unit']): string {
  if (value === undefined || value === null) return '—';
  if (typeof value !== 'number') return String(value);
  switch (unit) {
    case 'ms':
      return formatMs(value);
    case 'count':
      return formatCount(value);
    case 'bytes':
      return formatBytes(value);
    case 'text':
      return String(round(value));
  }
}

export function renderSection(section: Section): string {
  const header = section.columns.map((c) => c.header);
  const body = section.rows.map((row) => section.columns.map((c) => formatCell(row[c.key], c.unit)));
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((cells) => cells[i]!.length)));
  // The first column (the scenario) reads left-aligned; numbers right-aligned.
  const line = (cells: readonly string[]): string =>
    cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ');
  const rule = widths.map((w) => '─'.repeat(w)).join('  ');
  const out = [`${section.title}`, rule, line(header), rule, ...body.map(line), rule];
  for (const check of section.checks) out.push(`  [${check.ok ? ' OK ' : 'FAIL'}] ${check.name}: ${check.detail}`);
  for (const note of section.notes) out.push(`  · ${note}`);
  return out.join('\n');
}

export function renderMachine(machine: MachineInfo): string {
  return `node ${machine.node} (v8 ${machine.v8}) on ${machine.platform}/${machine.arch}, ${machine.cpus} × ${machine.cpuModel}, ` +
    `${formatBytes(machine.totalMemoryBytes)} RAM — ${machine.date}`;
}

/** Every number rounded (to 3 decimals) for the file, at any depth; everything else as produced. */
function rounded(value: unknown): unknown {
  if (typeof value === 'number') return round(value);
  if (Array.isArray(value)) return value.map(rounded);
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, rounded(v)]));
  return value;
}

export function writeResults(file: URL, payload: Results): void {
  mkdirSync(new URL('.', file), { recursive: true });
  const json = { ...payload, wallSeconds: round(payload.wallSeconds, 1), sections: rounded(payload.sections) };
  writeFileSync(file, `${JSON.stringify(json, null, 2)}\n`);
}

/** The columns every load run reports: scenario, concurrency, volume, throughput, then p50/p99 per mark. */
export function loadColumns(marks: ReadonlyArray<readonly [mark: string, label: string]>): Column[] {
  const columns: Column[] = [
    { key: 'scenario', header: 'scenario', unit: 'text' },
    { key: 'inFlight', header: 'in flight', unit: 'count' },
    { key: 'utterances', header: 'utterances', unit: 'count' },
    { key: 'perSecond', header: 'contests/s', unit: 'count' },
  ];
  for (const [mark, label] of marks) {
    columns.push({ key: `${mark}P50`, header: `${label} p50 ms`, unit: 'ms' });
    columns.push({ key: `${mark}P99`, header: `${label} p99 ms`, unit: 'ms' });
  }
  columns.push({ key: 'gcMaxMs', header: 'GC max pause ms', unit: 'ms' });
  columns.push({ key: 'gcShare', header: 'GC % of wall', unit: 'text' });
  return columns;
}

export function loadRow(
  scenario: string,
  inFlight: number,
  result: LoadResult,
  marks: readonly string[],
  extra: Readonly<Record<string, Cell>> = {},
): Record<string, Cell> {
  const row: Record<string, Cell> = {
    scenario,
    inFlight,
    utterances: result.completed,
    perSecond: result.perSecond,
    gcCount: result.gc.count,
    gcTotalMs: result.gc.totalMs,
    gcMaxMs: result.gc.maxMs,
    gcShare: `${((result.gc.totalMs / result.wallMs) * 100).toFixed(0)}%`,
    wallMs: result.wallMs,
  };
  for (const mark of marks) {
    const summary = summarize(result.latencies[mark] ?? []);
    row[`${mark}P50`] = summary.p50;
    row[`${mark}P99`] = summary.p99;
    row[`${mark}Mean`] = summary.mean;
    row[`${mark}Max`] = summary.max;
    row[`${mark}Missed`] = result.missed[mark] ?? 0;
  }
  return { ...row, ...extra };
}
