/**
 * Percentiles and number formatting for the benchmark suite. Samples are milliseconds unless a caller says
 * otherwise; percentiles interpolate linearly between the two nearest ranks (the same definition as numpy's default).
 */
import { PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';

export interface Summary {
  readonly n: number;
  readonly mean: number;
  readonly min: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
}

/** `q` in [0, 1] of an ascending-sorted array; NaN when empty. */
export function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = (sorted.length - 1) * Math.min(Math.max(q, 0), 1);
  const lower = Math.floor(rank);
  const upper = Math.ceil(rank);
  const a = sorted[lower]!;
  const b = sorted[upper]!;
  return a + (b - a) * (rank - lower);
}

export function summarize(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const sum = sorted.reduce((total, x) => total + x, 0);
  return {
    n: sorted.length,
    mean: sorted.length === 0 ? Number.NaN : sum / sorted.length,
    min: sorted[0] ?? Number.NaN,
    p50: percentile(sorted, 0.5),
    p90: percentile(sorted, 0.9),
    p99: percentile(sorted, 0.99),
    max: sorted[sorted.length - 1] ?? Number.NaN,
  };
}

/** Median of a few repeated measurements (throughput runs). */
export function median(values: readonly number[]): number {
  return percentile([...values].sort((a, b) => a - b), 0.5);
}

/** Round for the JSON report: enough digits to compare runs, not the float noise. */
export function round(value: number, digits = 3): number {
  if (!Number.isFinite(value)) return value;
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

/** Milliseconds, to three significant-ish digits: 0.0412 → "0.041", 12.34 → "12.3", 512 → "512". */
export function formatMs(ms: number): string {
  if (!Number.isFinite(ms)) return '—';
  if (ms < 1) return ms.toFixed(3);
  if (ms < 10) return ms.toFixed(2);
  if (ms < 100) return ms.toFixed(1);
  return ms.toFixed(0);
}

/** Integer with thousands separators: 12345.6 → "12,346". */
export function formatCount(value: number): string {
  if (!Number.isFinite(value)) return '—';
  return Math.round(value).toLocaleString('en-US');
}

/** Bytes in KiB/MiB. */
export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes)) return '—';
  const sign = bytes < 0 ? '-' : '';
  const abs = Math.abs(bytes);
  if (abs < 1024) return `${sign}${abs.toFixed(0)} B`;
  if (abs < 1024 * 1024) return `${sign}${(abs / 1024).toFixed(2)} KiB`;
  return `${sign}${(abs / 1024 / 1024).toFixed(2)} MiB`;
}

export interface GcActivity {
  readonly count: number;
  /** Sum of pause durations (ms). */
  readonly totalMs: number;
  readonly maxMs: number;
}

/**
 * Collects this process's GC pauses from now until `stop()` (what explains a latency tail). Node records a GC
 * entry from a callback after the pause, so `stop` first yields one macrotask to let the last ones in.
 */
export function watchGc(): { stop(until?: number): Promise<GcActivity> } {
  const pauses: Array<{ startTime: number; duration: number }> = [];
  const take = (entries: readonly PerformanceEntry[]): void => {
    for (const { startTime, duration } of entries) pauses.push({ startTime, duration });
  };
  const observer = new PerformanceObserver((list) => take(list.getEntries()));
  observer.observe({ entryTypes: ['gc'] });
  return {
    /** `until` (a `performance.now()` time): ignore pauses that started later (e.g. a forced GC for a reading). */
    stop: async (until = performance.now()) => {
      await new Promise<void>((resolve) => setImmediate(resolve));
      take(observer.takeRecords());
      observer.disconnect();
      const counted = pauses.filter((pause) => pause.startTime < until);
      return {
        count: counted.length,
        totalMs: counted.reduce((sum, pause) => sum + pause.duration, 0),
        maxMs: counted.reduce((max, pause) => Math.max(max, pause.duration), 0),
      };
    },
  };
}
