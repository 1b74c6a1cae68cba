/**
 * The log's stdout destination (src/log/stdout-destination.ts): the daemon never waits for the reader of its stdout.
 * The pipe is simulated: `room` bytes it accepts before EAGAIN, or EPIPE once the reader has gone; retries run when
 * the test says so (the event loop's later turns).
 */
import { describe, expect, it } from 'vitest';
import { stdoutDestination } from '../../src/log/stdout-destination.js';

function pipe(room = Infinity) {
  const state = { room, gone: false, calls: 0, received: '' };
  const retries: Array<() => void> = [];
  const destination = stdoutDestination({
    maxQueuedBytes: 64,
    writeSync: (_fd, data) => {
      state.calls++;
      if (state.gone) throw Object.assign(new Error('EPIPE'), { code: 'EPIPE' });
      if (state.room === 0) throw Object.assign(new Error('EAGAIN'), { code: 'EAGAIN' });
      const n = Math.min(state.room, data.length);
      state.room -= n;
      state.received += data.subarray(0, n).toString('latin1');
      return n;
    },
    later: (retry) => retries.push(retry),
  });
  const runLater = (): void => {
    for (const retry of retries.splice(0)) retry();
  };
  const text = (): string => Buffer.from(state.received, 'latin1').toString('utf8');
  return { state, destination, runLater, text };
}

describe('stdout destination: the daemon never waits for its log reader', () => {
  it('a pipe with room: each line is written at once, in order', () => {
    const p = pipe();
    p.destination.write('one\n');
    p.destination.write('two\n');
    expect(p.text()).toBe('one\ntwo\n');
    expect(p.destination.stats()).toEqual({ dropped: 0, queuedBytes: 0, broken: false });
  });

  it('a full pipe (EAGAIN): lines wait without blocking, go out in order when it has room again; a line cut mid-character resumes at its byte', () => {
    const p = pipe(2);
    p.destination.write('héllo\n'); // 7 bytes: 2 go — 'h' and the first byte of 'é' — the rest waits
    p.destination.write('wörld\n');
    expect(p.destination.stats().queuedBytes).toBe(5 + 7);
    p.state.room = 6; // still not enough for all
    p.runLater();
    expect(p.text()).toBe('héllo\nw');
    p.state.room = Infinity;
    p.destination.write('!\n'); // behind the queue, never before it
    expect(p.text()).toBe('héllo\nw');
    p.runLater();
    expect(p.text()).toBe('héllo\nwörld\n!\n');
    expect(p.destination.stats().queuedBytes).toBe(0);
  });

  it('past maxQueuedBytes the oldest lines are dropped and counted; the count is written first when the pipe has room', () => {
    const p = pipe(0);
    for (let i = 0; i < 10; i++) p.destination.write(`line ${i} ........\n`); // 16 bytes each, 64 held at most
    expect(p.destination.stats().dropped).toBe(6);
    p.state.room = Infinity;
    p.runLater();
    const lines = p.text().trim().split('\n');
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 40, reason: 'log_lines_dropped', dropped: 6 });
    expect(lines.slice(1)).toEqual(['line 6 ........', 'line 7 ........', 'line 8 ........', 'line 9 ........']);
  });

  /** A JSON line of exactly `bytes` bytes (newline included). */
  const jsonLine = (tag: string, bytes: number): string => `{"msg":"${tag.padEnd(bytes - 11, '.')}"}\n`;

  it('a line already started in the pipe is never dropped: past the bound, the lines after it go, and every line that comes out is whole JSON', () => {
    const p = pipe(10);
    const first = jsonLine('first', 31);
    p.destination.write(first); // 10 bytes go, 21 wait
    for (const tag of ['b', 'c', 'd', 'e']) p.destination.write(jsonLine(tag, 12));
    expect(p.destination.stats().dropped).toBeGreaterThan(0);
    p.state.room = Infinity;
    p.runLater();
    const lines = p.text().trimEnd().split('\n');
    expect(lines[0]).toBe(first.trimEnd());
    for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow();
    expect(lines.filter((line) => line.includes('log_lines_dropped'))).toHaveLength(1);
  });

  it('the dropped-lines note cut by a partial write is finished, not written again: one note, every line whole JSON', () => {
    const p = pipe(0);
    for (const tag of ['a', 'b', 'c', 'd', 'e']) p.destination.write(jsonLine(tag, 17)); // 85 bytes: a and b dropped at 64
    p.state.room = 30; // part of the note (about 120 bytes)
    p.runLater();
    p.state.room = Infinity;
    p.runLater();
    const lines = p.text().trimEnd().split('\n');
    for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow();
    expect(lines.map((line) => JSON.parse(line) as { msg?: string; dropped?: number })).toMatchObject([{ dropped: 2 }, { msg: 'c.....' }, { msg: 'd.....' }, { msg: 'e.....' }]);
  });

  it('the reader gone (EPIPE): logging stops for good — no queue, no more write calls, flushSync returns at once', () => {
    const p = pipe(0);
    p.destination.write('queued\n');
    p.state.gone = true;
    p.runLater();
    expect(p.destination.stats()).toEqual({ dropped: 0, queuedBytes: 0, broken: true });
    const calls = p.state.calls;
    p.destination.write('into the void\n');
    p.destination.flushSync();
    p.runLater();
    expect(p.state.calls).toBe(calls);
  });

  it('flushSync on a pipe that stays full makes one pass and returns (it never waits)', () => {
    const p = pipe(0);
    p.destination.write('a\n');
    const before = p.state.calls;
    p.destination.flushSync();
    expect(p.state.calls).toBe(before + 1);
    expect(p.destination.stats().queuedBytes).toBe(2);
  });
});
