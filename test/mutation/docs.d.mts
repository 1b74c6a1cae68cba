// Types of docs.mjs, for the drift test (test/docs/mutation-docs.test.ts).
export interface Counts {
  readonly killed: number;
  readonly timeout: number;
  readonly survived: number;
  readonly noCoverage: number;
  readonly ignored: number;
  readonly errors: number;
}
export interface LedgerEntry {
  readonly sha256: string;
  readonly run: string;
  readonly counts: Counts;
  readonly survivors: readonly string[];
}
export type Ledger = Readonly<Record<string, LedgerEntry>>;

export const LEDGER_START: string;
export const LEDGER_END: string;
export function status(file: string, ledger: Ledger): 'current' | 'STALE' | 'MISSING';
export function ledgerTables(ledger?: Ledger): string;
export function withLedgerTables(readme: string, ledger?: Ledger): string;
