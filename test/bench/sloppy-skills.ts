/**
 * Benchmark 11 — skills that conform to the letter but not to our habits (`npm run bench -- sloppy`), the way a user
 * meets them: the README daemon (example skills on; state directory of its own), the skills of
 * `sloppy-skills-process.ts` in another process, a front end asking one question at a time.
 *
 *  1. `thinker` claims every question 200 ms after the ping (inside COMMON-QUERY-1 §6.3's 500 ms poll, past our
 *     125 ms claim bound): ten questions — how many does it answer? (The poll learns it claims late.)
 *  2. `sloppy` responds with an answer but no `conf` (§7.1 says it MUST be there) and declared `latency_ms` 300:
 *     its response is its decline at once — how long after it arrives does the contest end?
 *  3. `fresh.fb` pongs with a message of its own making (no session, utterance or contest id): is it taken?
 * Time is the front end's: from the question sent (or the sloppy response seen on the bus) to the handled.
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { WebSocket } from 'ws';
import { freePort, startReadmeDaemon } from './readme-daemon.js';
import type { Section } from './report.js';

type Frame = { type: string; data: Record<string, unknown>; context: Record<string, unknown> };

interface Asked {
  readonly ms: number;
  /** What was spoken for it (the handled's utterance), or the dispatched fallback skill. */
  readonly answer: string;
  /** ms from the sloppy skill's response on the bus to the handled (when it sent one). */
  readonly afterSloppy: number | undefined;
}

async function ask(socket: WebSocket, frames: Frame[], utterance: string, id: string): Promise<Asked> {
  const sent = performance.now();
  let sloppyAt: number | undefined;
  return new Promise((resolve) => {
    const onMessage = (raw: unknown): void => {
      const m = JSON.parse(String(raw)) as Frame;
      frames.push(m);
      if (m.context['utterance_id'] !== id) return;
      if (m.type === 'sloppy.common_query.response') sloppyAt = performance.now();
      if (m.type !== 'ovos.utterance.handled') return;
      socket.off('message', onMessage);
      const mine = frames.filter((f) => f.context['utterance_id'] === id);
      const spoke = mine.find((f) => f.type === 'ovos.utterance.speak')?.data['utterance'];
      const dispatched = mine.find((f) => f.type.endsWith(':fallback'))?.type.replace(/:fallback$/, '');
      const now = performance.now();
      resolve({ ms: now - sent, answer: typeof spoke === 'string' ? spoke : (dispatched ?? '-'), afterSloppy: sloppyAt === undefined ? undefined : now - sloppyAt });
    };
    socket.on('message', onMessage);
    socket.send(JSON.stringify({ type: 'ovos.utterance.handle', data: { utterances: [utterance] }, context: { session: { session_id: id }, utterance_id: id } }));
  });
}

export async function benchSloppySkills(): Promise<Section> {
  const state = mkdtempSync(join(tmpdir(), 'ovos-bench-sloppy-'));
  const daemon = await startReadmeDaemon(await freePort(), state);
  const skills = fork(new URL('./sloppy-skills-process.js', import.meta.url), [daemon.url], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  try {
    await new Promise((resolve) => skills.once('message', resolve));
    const socket = new WebSocket(daemon.url);
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    const frames: Frame[] = [];
    const thinker: Asked[] = [];
    for (let i = 0; i < 10; i++) thinker.push(await ask(socket, frames, `what is the capital of country number ${i}`, `think-${i}`));
    const sloppy: Asked[] = [];
    for (let i = 0; i < 3; i++) sloppy.push(await ask(socket, frames, `who painted picture number ${i}`, `sloppy-${i}`));
    const fresh: Asked[] = [];
    for (let i = 0; i < 3; i++) fresh.push(await ask(socket, frames, `do a barrel roll number ${i}`, `fresh-${i}`));
    socket.close();
    const byThinker = thinker.filter((a) => a.answer.startsWith('thinker:')).length;
    const fmt = (list: readonly Asked[]): string => list.map((a) => a.ms.toFixed(0)).join(', ');
    const afterSloppy = sloppy.map((a) => a.afterSloppy);
    const defects = daemon.lines.filter((l) => l['reason'] === 'conf_missing').length;
    return {
      id: 'sloppy',
      title: '11. Skills that conform to the letter, not to our habits (the README daemon, skills in another process)',
      params: { thinkerClaimsAfterMs: 200, sloppyLatencyMs: 300, sloppyRespondsAfterMs: 30 },
      columns: [
        { key: 'case', header: 'case', unit: 'text' },
        { key: 'ms', header: 'question → handled (ms, each)', unit: 'text' },
        { key: 'result', header: 'result', unit: 'text' },
      ],
      rows: [
        { case: 'thinker claims 200 ms after each ping: 10 questions', ms: fmt(thinker), result: `${byThinker} of 10 answered by thinker (the others: ${thinker.filter((a) => !a.answer.startsWith('thinker:')).map((a) => a.answer).join(', ') || 'none'})` },
        { case: 'sloppy responds without conf (latency_ms 300): 3 questions', ms: fmt(sloppy), result: `handled ${afterSloppy.map((t) => (t === undefined ? '?' : t.toFixed(1))).join(', ')} ms after its response; answered: ${[...new Set(sloppy.map((a) => a.answer))].join(', ')}` },
        { case: 'fresh.fb pongs with no session or ids: 3 commands', ms: fmt(fresh), result: `dispatched to: ${[...new Set(fresh.map((a) => a.answer))].join(', ')}` },
      ],
      notes: [`conf_missing warns in the daemon log: ${defects} (at most one a minute per skill)`],
      checks: [
        { name: 'a claimant at 200 ms answers 9 of its first 10 questions', ok: byThinker >= 9, detail: `${byThinker} of 10` },
        { name: 'a response without conf ends its contest within one round trip of arriving (≤ 50 ms)', ok: afterSloppy.every((t) => t !== undefined && t <= 50), detail: afterSloppy.map(String).join(', ') },
        { name: 'a pong with no ids is taken by the one contest awaiting that skill', ok: fresh.every((a) => a.answer === 'fresh.fb'), detail: fresh.map((a) => a.answer).join(', ') },
      ],
    };
  } finally {
    skills.kill();
    await daemon.stop();
    rmSync(state, { recursive: true, force: true });
  }
}
