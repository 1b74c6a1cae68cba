/**
 * Attacks on every entrance, of the noisy-neighbour kind: the daemon as `npm start` runs it (its registry file kept),
 * the mixed-load skills in another process, and a quiet client in a third asking a question every 50 ms over 4
 * sessions while each attack runs from this process — the attacks of test/support/attacks.ts, the same the attack
 * tests assert bounds for (test/integration/attacks.test.ts). Per attack: the quiet client's p50/p90 and lost or
 * doubled answers, the daemon's peak resident memory and the bytes it logged. The stage link's attacks run against a
 * second daemon that leaves the utterances to ovos-core (`orchestrator.takesUtterances: false`), with the quiet
 * client on the link: the plugin's end, a stage request every 50 ms.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectionFlood, get, longIdFlood, open, registryFlood, slowLinkReader, stageRequest } from '../support/attacks.js';
import type { DriverResult } from './driver-process.js';
import { rssOf, startDaemonProcess, startDriver, startMixedSkills, type DaemonProcess } from './mixed-load.js';
import type { Section } from './report.js';
import { summarize, type Summary } from './stats.js';

const MB = 1024 * 1024;

interface Row {
  readonly attack: string;
  readonly quiet: Summary;
  readonly lost: number;
  readonly doubled: number;
  readonly rssPeakMb: number;
  readonly loggedKb: number;
  readonly outcome: string;
  /** What the quiet client lost or had doubled, first few. */
  readonly examples: readonly string[];
}

/** Run `attack` while `ask` runs rounds for as long as it lasts; the daemon's peak RSS and log bytes meanwhile. */
async function during(
  daemon: DaemonProcess,
  label: string,
  ask: (round: string) => Promise<Asked>,
  attack: () => Promise<string>,
): Promise<Row> {
  let peak = rssOf(daemon.pid);
  const sampler = setInterval(() => (peak = Math.max(peak, rssOf(daemon.pid))), 100);
  const logged = daemon.bytesLogged();
  let busy = true;
  let outcome = '';
  const attacking = attack().then(
    (text) => (outcome = text),
    (error: unknown) => (outcome = `failed: ${String(error)}`),
  ).finally(() => (busy = false));
  const latencies: number[] = [];
  const examples: string[] = [];
  let lost = 0;
  let doubled = 0;
  for (let round = 0; busy || round === 0; round++) {
    const r = await ask(`${label}-${round}`);
    latencies.push(...r.latencies);
    lost += r.lost;
    doubled += r.doubled;
    examples.push(...r.examples);
  }
  await attacking;
  clearInterval(sampler);
  return { attack: label, quiet: summarize(latencies), lost, doubled, rssPeakMb: peak / MB, loggedKb: (daemon.bytesLogged() - logged) / 1024, outcome, examples: examples.slice(0, 3) };
}

interface Asked {
  readonly latencies: number[];
  readonly lost: number;
  readonly doubled: number;
  readonly examples: readonly string[];
}

/** The plugin's end of the stage link: a stage request every 50 ms for a second, each reply's latency. */
async function linkAsker(url: string, authorization: Record<string, string>): Promise<(round: string) => Promise<Asked>> {
  const socket = await open(url, authorization);
  const sent = new Map<string, number>();
  const replies = new Map<string, number>();
  const latencies: number[] = [];
  socket.on('message', (data) => {
    const id = /"request_id":"([^"]+)"/.exec(String(data))?.[1];
    const at = id === undefined ? undefined : sent.get(id);
    if (id === undefined || at === undefined) return;
    replies.set(id, (replies.get(id) ?? 0) + 1);
    if (replies.get(id) === 1) latencies.push(performance.now() - at);
  });
  return async (round) => {
    latencies.length = 0;
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const id = `${round}-${i}`;
      ids.push(id);
      sent.set(id, performance.now());
      socket.send(stageRequest(id, 'fallback_low'));
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const deadline = performance.now() + 5_000;
    while (ids.some((id) => !replies.has(id)) && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
    const lost = ids.filter((id) => !replies.has(id));
    return { latencies: [...latencies], lost: lost.length, doubled: ids.filter((id) => (replies.get(id) ?? 0) > 1).length, examples: lost.map((id) => `${id}: no reply within 5 s`) };
  };
}

const fromDriver = (r: DriverResult): Asked => ({ latencies: Object.values(r.latencies).flat(), lost: r.lost, doubled: r.doubled, examples: r.examples });

/**
 * A stage link client with the token that sends `total` stage requests at `perSecond` (as fast as it may: the plugin's
 * end never sends more than ovos-core asks), reading every reply: how each request was answered.
 */
/** Connections held this long: an attack's duration, real time (a benchmark). */
const holdFor = (ms: number) => (): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function linkRequestFlood(url: string, headers: Record<string, string>, total: number, perSecond: number): Promise<{ replies: number; unavailable: number; ms: number }> {
  const socket = await open(url, headers);
  let replies = 0;
  let unavailable = 0;
  let repliedAll = (): void => {};
  const allReplied = new Promise<void>((resolve) => (repliedAll = resolve));
  socket.on('message', (data) => {
    replies++;
    if (String(data).includes('"error":"unavailable"')) unavailable++;
    if (replies === total) repliedAll();
  });
  const started = performance.now();
  for (let i = 0; i < total; i++) {
    socket.send(stageRequest(`flood-${i}`, 'fallback_low'));
    const due = started + ((i + 1) / perSecond) * 1000;
    if (i % 20 === 19 && due > performance.now()) await new Promise((resolve) => setTimeout(resolve, due - performance.now()));
  }
  await Promise.race([allReplied, new Promise((resolve) => setTimeout(resolve, 30_000).unref())]);
  socket.close();
  return { replies, unavailable, ms: performance.now() - started };
}

export async function benchAttacks(): Promise<Section> {
  const rows: Row[] = [];
  const closers: Array<() => Promise<void>> = [];
  try {
    // The bus: a daemon that takes the utterances, its registry file kept as `npm start` keeps it.
    const daemon = await startDaemonProcess({ registryFile: true });
    closers.unshift(() => daemon.stop());
    const skills = await startMixedSkills(daemon, 'per-skill');
    closers.unshift(() => skills.stop());
    const quiet = await startDriver(daemon.url);
    closers.unshift(() => quiet.stop());
    await quiet.run({ runId: 'warmup', total: 300, concurrency: 1 });
    const ask = async (round: string) => fromDriver(await quiet.run({ runId: round, total: 20, concurrency: 4, ratePerSecond: 20 }));
    const idle = (ms: number) => async (): Promise<string> => {
      await new Promise((resolve) => setTimeout(resolve, ms));
      return 'none';
    };
    const inspector = daemon.urlOf('inspector page');

    rows.push(await during(daemon, 'none (the quiet client alone)', ask, idle(10_000)));
    rows.push(await during(daemon, 'registry flood inside every count bound', ask, () => registryFlood(daemon.url)));
    rows.push(
      await during(daemon, 'inspector state read 50 times with the registry full', ask, async () => {
        const reads = [];
        for (let i = 0; i < 50; i++) reads.push(await get(`${inspector}api/state`));
        const ms = summarize(reads.map((r) => r.ms));
        return `each ${(Math.max(...reads.map((r) => r.bytes)) / 1024).toFixed(0)} kB at most, p50 ${ms.p50.toFixed(0)} ms, max ${ms.max.toFixed(0)} ms`;
      }),
    );
    rows.push(await during(daemon, 'registrations with ids past the bound', ask, () => longIdFlood(daemon.url)));
    rows.push(
      await during(daemon, '700 connections at once, held 2 s', ask, async () => {
        const flood = await connectionFlood(daemon.url, 700, {}, holdFor(2_000));
        return `${flood.opened} accepted, ${Object.entries(flood.refused).map(([why, n]) => `${n} ${why}`).join(', ')}`;
      }),
    );

    // The stage link: a daemon that leaves the utterances to ovos-core.
    const config = join(mkdtempSync(join(tmpdir(), 'ovos-bench-attacks-')), 'config.json');
    writeFileSync(config, JSON.stringify({ orchestrator: { takesUtterances: false, stagePort: 0 } }));
    const staged = await startDaemonProcess({ args: ['--config', config] });
    closers.unshift(() => staged.stop());
    const stagedSkills = await startMixedSkills(staged, 'per-skill');
    closers.unshift(() => stagedSkills.stop());
    const link = staged.urlOf('stage requests also answered');
    if (link === undefined) throw new Error('the second daemon serves no stage link');
    const authorization = { authorization: `Bearer ${readFileSync(join(staged.state, 'ovos-contests', 'stage-link-token'), 'utf8').trim()}` };
    const linkAsk = await linkAsker(link, authorization);
    await linkAsk('warmup');
    rows.push(await during(staged, 'stage link: none (the plugin alone)', linkAsk, idle(10_000)));
    rows.push(
      await during(staged, 'stage link: 2,000 connections without the token', linkAsk, async () => {
        const flood = await connectionFlood(link, 2_000);
        return `${flood.opened} accepted, ${Object.entries(flood.refused).map(([why, n]) => `${n} ${why}`).join(', ')}`;
      }),
    );
    rows.push(
      await during(staged, 'stage link: 100 links with the token at once', linkAsk, async () => {
        const flood = await connectionFlood(link, 100, authorization, holdFor(2_000));
        return `${flood.opened} more accepted beside the plugin's, ${Object.entries(flood.refused).map(([why, n]) => `${n} ${why}`).join(', ')}`;
      }),
    );
    rows.push(
      await during(staged, 'stage link: 20,000 requests at 2,000/s over one link with the token', linkAsk, async () => {
        const flood = await linkRequestFlood(link, authorization, 20_000, 2_000);
        return `${flood.replies.toLocaleString('en')} replies in ${(flood.ms / 1000).toFixed(1)} s, ${flood.unavailable.toLocaleString('en')} of them unavailable (past 64 in flight)`;
      }),
    );
    rows.push(
      await during(staged, 'stage link: a link that sends requests and never reads', linkAsk, async () => {
        const slow = await slowLinkReader(link, authorization);
        return `${(slow.sentBytes / MB).toFixed(1)} MB sent; ${slow.closed ? 'paused, then closed' : 'not closed'}`;
      }),
    );

    const base = rows[0]!;
    const fmt = (s: Summary): string => `${s.p50.toFixed(1)} / ${s.p90.toFixed(1)} ms`;
    const busRows = rows.filter((r) => !r.attack.startsWith('stage link'));
    const linkRows = rows.filter((r) => r.attack.startsWith('stage link'));
    const linkBase = linkRows[0]!;
    // The rows with an attack (the first of each daemon has none: its own log of the quiet client's questions).
    const attacks = rows.filter((r) => r.outcome !== 'none');
    return {
      id: 'attacks',
      title: 'Attacks on every entrance: another client\'s latency and the daemon\'s memory while each runs',
      params: {},
      columns: [
        { key: 'attack', header: 'attack', unit: 'text' },
        { key: 'quiet', header: "quiet client's p50 / p90", unit: 'text' },
        { key: 'lost', header: 'lost / doubled', unit: 'text' },
        { key: 'rss', header: 'daemon RSS peak', unit: 'text' },
        { key: 'logged', header: 'logged', unit: 'text' },
        { key: 'outcome', header: 'what the attack got', unit: 'text' },
      ],
      rows: rows.map((r) => ({ attack: r.attack, quiet: fmt(r.quiet), lost: `${r.lost} / ${r.doubled}`, rss: `${r.rssPeakMb.toFixed(0)} MB`, logged: `${r.loggedKb.toFixed(0)} kB`, outcome: r.outcome })),
      notes: [
        'the quiet client asks a question every 50 ms over 4 sessions (on the bus: published → its ovos.utterance.handled; on the stage link: a fallback_low stage request → its reply), in rounds of one second for as long as the attack runs',
        'the attacks are those of test/support/attacks.ts; test/integration/attacks.test.ts asserts their bounds (heap after a full collection, log bytes, file size, connections accepted)',
        'RSS includes garbage V8 has not collected yet: it lets the heap grow before a full collection',
        ...rows.flatMap((r) => r.examples.map((e) => `${r.attack}: ${e}`)),
      ],
      checks: [
        { name: 'no answer of the quiet client lost or doubled during any attack', ok: rows.every((r) => r.lost === 0 && r.doubled === 0), detail: rows.map((r) => `${r.lost}/${r.doubled}`).join(', ') },
        { name: 'every attack ran to its end', ok: rows.every((r) => !r.outcome.startsWith('failed')), detail: rows.filter((r) => r.outcome.startsWith('failed')).map((r) => `${r.attack}: ${r.outcome}`).join('; ') || 'all' },
        { name: "on the bus, the quiet client's p90 under any attack stays under 250 ms", ok: busRows.every((r) => r.quiet.p90 <= 250), detail: busRows.map((r) => r.quiet.p90.toFixed(0)).join(', ') + ` ms (alone ${base.quiet.p90.toFixed(0)})` },
        { name: "on the stage link, the plugin's p90 under any attack stays under 250 ms", ok: linkRows.every((r) => r.quiet.p90 <= 250), detail: linkRows.map((r) => r.quiet.p90.toFixed(0)).join(', ') + ` ms (alone ${linkBase.quiet.p90.toFixed(0)})` },
        // Log volume is bounded per connection (64 registration lines a minute each, refusals once a minute per reason):
        // the registry flood uses 12 connections.
        { name: 'the daemon logs under 128 kB per attacking connection (the registry flood: 12 connections)', ok: attacks.every((r) => r.loggedKb < (r.attack.startsWith('registry flood') ? 12 : 1) * 128), detail: attacks.map((r) => r.loggedKb.toFixed(0)).join(', ') + ' kB' },
        { name: "the daemon's RSS stays under 1 GB", ok: rows.every((r) => r.rssPeakMb < 1024), detail: `peak ${Math.max(...rows.map((r) => r.rssPeakMb)).toFixed(0)} MB` },
      ],
    };
  } finally {
    for (const close of closers) await close();
  }
}
