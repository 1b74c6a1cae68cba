/**
 * The inspector in a real browser: the daemon with its example skills (real websocket clients), a fallback and a
 * common-query contest driven over the bus, and the page opened in headless Chromium (Debian's `chromium`, driven
 * by playwright-core). Asserts what a person would see: the utterances listed, a live contest's state highlighted
 * on its diagram and then its final one, the timeline in order, the registry, the roster and the decisions.
 *
 * The live moment is held open deterministically: a test skill is asked first and does not pong until the page
 * has shown it waiting (the ping timeout is set far beyond the test). Nothing sleeps; every wait is on the page or
 * on a frame. Writes a screenshot to $INSPECTOR_SCREENSHOT (the README's image: `INSPECTOR_SCREENSHOT=
 * visualizations/inspector.png npx vitest run … inspector.e2e`), else into the OS temp folder.
 *
 * Chromium: $CHROMIUM_PATH, /usr/bin/chromium or /usr/bin/chromium-browser. `.ci/run` installs Debian's package;
 * where none can be installed the suite is skipped and says so.
 */
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createMessage, reply } from '../../src/bus/message.js';
import { startDaemon, type Daemon } from '../../src/daemon/daemon.js';
import { silentLogger } from '../../src/log/logger.js';
import { partitionOf } from '../../src/cluster/subjects.js';
import { natsServerAbsent, startNatsServer } from '../support/nats-server.js';
import { Probe, captureLogs, configWith } from '../integration/probe.js';

const CHROMIUM = [process.env['CHROMIUM_PATH'], '/usr/bin/chromium', '/usr/bin/chromium-browser'].find((path): path is string => path !== undefined && existsSync(path));
if (CHROMIUM === undefined) console.warn('inspector e2e skipped: no Chromium found (set CHROMIUM_PATH, or apt-get install chromium)');

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

let browser: Browser | undefined;
beforeAll(async () => {
  if (CHROMIUM === undefined) return;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}, 60_000);
afterAll(async () => {
  await browser?.close();
});

/** expect.poll's own 1 s is short for a browser on a loaded 2-core CI machine: a guard, not a timing. */
const PATIENT = { timeout: 15_000, interval: 50 };

const titlesOfActive = (page: Page, contest: string): Promise<string[]> =>
  page.locator(`${contest} .diagram g.active > title`).allTextContents();

describe.skipIf(CHROMIUM === undefined)('inspector in headless Chromium', () => {
  it('shows the contests, the highlighted state as it changes, the timeline in order, the registry, roster and decisions', async () => {
    // A ping timeout far beyond the test: the held skill's contest waits for it, not for the clock.
    // The question below is the daemon's first: in the cold start its poll waits for the example skill's claim up to
    // the ceiling, however loaded the machine (src/plugins/README.md "Common-query poll").
    const config = configWith({ bus: { port: 0 }, exampleSkills: true, log: { level: 'silent' }, fallback: { pingTimeoutMs: 60_000 }, orchestrator: { matchTimeoutMs: 120_000 } });
    const daemon: Daemon = await startDaemon(config, silentLogger());
    cleanups.push(() => daemon.close());
    const probe = await Probe.connect(daemon.url);
    cleanups.push(() => probe.close());
    // The held skill: priority 5, asked before the example skills of fallback_high; pongs only when told to.
    probe.send(createMessage('ovos.fallback.register', { skill_id: 'held.skill', priority: 5 }, { skill_id: 'held.skill', session: { session_id: 'default' } }));
    await probe.barrier();

    const page = await browser!.newPage({ viewport: { width: 1500, height: 1000 } });
    cleanups.push(() => page.close());
    await page.goto(daemon.inspector!.url);
    await expect.poll(() => page.getByTestId('status').textContent(), PATIENT).toBe('live');
    await expect.poll(() => page.locator('[data-testid=registry-row]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-skill'))), PATIENT).toEqual(['meaning-of-life.example', 'dont-know.example', 'held.skill']);

    // 1. A common query, answered by the example knowledge skill (OVOS-COMMON-QUERY-1).
    probe.utter('what is the speed of light', { utteranceId: 'cq-1', session: { session_id: 'kitchen' } });
    // The held skill is asked first in fallback_high; tell it to decline so the utterance goes on to common query.
    const firstPing = await probe.waitFor((m) => m.type === 'held.skill.fallback.ping', 'ping of the held skill');
    probe.send(reply(firstPing, 'held.skill.fallback.pong', { skill_id: 'held.skill', can_handle: false }));
    await probe.handled('cq-1');

    // 2. A fallback contest held open on the held skill: the page shows it live, waiting in `querying`.
    probe.utter('what is the meaning of life', { utteranceId: 'fb-1', session: { session_id: 'bedroom' } });
    const ping = await probe.waitFor((m) => m.type === 'held.skill.fallback.ping' && m.context['utterance_id'] === 'fb-1', 'ping of the held skill');
    const liveFallback = '[data-testid=contest][data-kind=fallback][data-status=live]';
    await expect.poll(() => titlesOfActive(page, liveFallback), PATIENT).toEqual(['fallback_querying']);
    await expect.poll(() => page.locator(`${liveFallback} [data-testid=contest-state]`).textContent(), PATIENT).toBe('querying');
    await expect.poll(() => page.getByTestId('detail-utterance').textContent(), PATIENT).toBe('what is the meaning of life');

    // The skill answers: the highlight moves to the final state, and the decision appears.
    probe.send(reply(ping, 'held.skill.fallback.pong', { skill_id: 'held.skill', can_handle: true }));
    const dispatch = await probe.waitFor((m) => m.type === 'held.skill:fallback', 'dispatch to the held skill');
    probe.send(reply(dispatch, 'ovos.utterance.speak', { utterance: 'held and answered' }));
    probe.send(reply(dispatch, 'mycroft.skill.handler.complete', {}));
    await probe.handled('fb-1');
    const doneFallback = '[data-testid=contest][data-kind=fallback][data-status=done]';
    await expect.poll(() => titlesOfActive(page, doneFallback), PATIENT).toEqual(['fallback_matched']);
    await expect.poll(() => page.getByTestId('detail-outcome').textContent(), PATIENT).toBe('completed');

    // The timeline, in the order it happened: ping, pong, matched, dispatch, completion, handled.
    const timeline = await page.locator('[data-testid=timeline-entry]').evaluateAll((rows) => rows.map((r) => [...r.querySelectorAll('td')].map((td) => td.textContent ?? '')));
    const topics = timeline.map((cells) => cells[2]);
    const order = ['held.skill.fallback.ping', 'held.skill.fallback.pong', 'ovos.intent.matched', 'held.skill:fallback', 'mycroft.skill.handler.complete', 'ovos.utterance.handled'].map((t) => topics.indexOf(t));
    expect(order.every((i) => i >= 0)).toBe(true);
    expect(order).toEqual([...order].sort((a, b) => a - b));
    const offsets = timeline.map((cells) => Number(cells[0]));
    expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
    expect(timeline.find((cells) => cells[2] === 'held.skill.fallback.pong')?.[3]).toBe('held.skill');
    expect(timeline.some((cells) => cells[1] === 'decision' && cells[3] === 'held.skill')).toBe(true);

    // Both utterances listed, newest first; the decisions say who decided what; the roster knows the cq skill.
    await expect.poll(() => page.locator('[data-testid=utterance] > div:first-child').allTextContents(), PATIENT).toEqual(['what is the meaning of life', 'what is the speed of light']);
    const decisions = () => page.locator('[data-testid=decision]').evaluateAll((rows) => rows.map((r) => [...r.querySelectorAll('td')].slice(0, 4).map((td) => td.textContent)));
    await expect.poll(decisions, PATIENT).toEqual([
      ['bedroom', 'what is the meaning of life', 'completed', 'held.skill (fallback_high)'],
      ['kitchen', 'what is the speed of light', 'completed', 'common_query (common_query)'],
    ]);
    await expect.poll(() => page.locator('[data-testid=roster-row] td:first-child').allTextContents(), PATIENT).toEqual(['local-knowledge.example']);

    // The common-query utterance: its contest ended in `done`, highlighted, and its answer is credited to its skill.
    await page.locator('[data-testid=utterance]', { hasText: 'speed of light' }).click();
    await expect.poll(() => titlesOfActive(page, '[data-testid=contest][data-kind=common_query]'), PATIENT).toEqual(['commonQuery_done']);
    await expect.poll(() => page.locator('#detail .meta').textContent(), PATIENT).toContain('(answer of local-knowledge.example)');
    const cqTopics = await page.locator('[data-testid=timeline-entry] td:nth-child(3)').allTextContents();
    const cqOrder = ['ovos.common_query.ping', 'ovos.common_query.pong', 'pollClaimBound', 'local-knowledge.example:common_query', 'local-knowledge.example.common_query.response'].map((t) => cqTopics.indexOf(t));
    expect(cqOrder.every((i) => i >= 0)).toBe(true);
    expect(cqOrder).toEqual([...cqOrder].sort((a, b) => a - b));

    // The session filter narrows the lists to one session.
    await page.getByTestId('session-filter').fill('kitchen');
    await expect.poll(() => page.locator('[data-testid=decision]').count(), PATIENT).toBe(1);
    await page.getByTestId('session-filter').fill('');

    // Trace export from the page: the link downloads the trace the timing harness replays.
    await page.locator('[data-testid=utterance]', { hasText: 'meaning of life' }).click();
    await expect.poll(() => page.getByTestId('export-trace').getAttribute('href'), PATIENT).toContain('fb-1');
    const href = await page.getByTestId('export-trace').getAttribute('href');
    const trace = (await (await fetch(new URL(href!, daemon.inspector!.url))).json()) as { format: string; utterance: string; messages: unknown[] };
    expect(trace).toMatchObject({ format: 'ovos-contests-trace/1', utterance: 'what is the meaning of life' });

    await page.screenshot({ path: process.env['INSPECTOR_SCREENSHOT'] ?? join(tmpdir(), 'ovos-contests-inspector.png'), fullPage: true });
  }, 60_000);
});

describe.skipIf(CHROMIUM === undefined)('a web page in Chromium and the bus: only pages of this machine, or listed, may open it', () => {
  /**
   * A browser of its own whose resolver maps the test's site names to 127.0.0.1, where a plain HTTP server of the test
   * serves a blank page: a real page load, and a real upgrade carrying the site's `Origin` — from loopback to loopback,
   * so Chromium's own local-network checks (which would stop a public page before it reaches us) stay out of the way.
   */
  async function sitesBrowser(names: readonly string[]): Promise<{ readonly browser: Browser; readonly port: number }> {
    const server = createServer((_request, response) => response.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>a page</title>'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const rules = names.map((name) => `MAP ${name} 127.0.0.1`).join(', ');
    const own = await chromium.launch({ executablePath: CHROMIUM!, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', `--host-resolver-rules=${rules}`] });
    cleanups.push(() => own.close());
    return { browser: own, port: (server.address() as AddressInfo).port };
  }

  /** In a page of `origin`, open the bus: 'open' on its greeting, else 'refused'. */
  async function openBusFrom(sites: Browser, origin: string, busUrl: string): Promise<string> {
    const page = await sites.newPage();
    await page.goto(`${origin}/`);
    return page.evaluate(
      (url) =>
        new Promise<string>((resolve) => {
          const socket = new WebSocket(url);
          socket.onmessage = (event) => {
            resolve(String(event.data).includes('"connected"') ? 'open' : 'other');
            socket.close();
          };
          socket.onerror = () => resolve('refused');
        }),
      busUrl,
    );
  }

  it("a page from another site is refused (403, origin_not_allowed); a page listed in bus.allowedOrigins and one of this machine open it", async () => {
    const sites = await sitesBrowser(['evil.example.com', 'friend.example.com']);
    const logs = captureLogs('info');
    const daemon: Daemon = await startDaemon(configWith({ bus: { port: 0, allowedOrigins: [`http://friend.example.com:${sites.port}`] } }), logs.logger);
    cleanups.push(() => daemon.close());

    expect(await openBusFrom(sites.browser, `http://evil.example.com:${sites.port}`, daemon.url)).toBe('refused');
    const refused = await logs.lines.waitFor((l) => l.reason === 'origin_not_allowed', 'the daemon refusing the page');
    expect(refused).toMatchObject({ origin: `http://evil.example.com:${sites.port}` });

    expect(await openBusFrom(sites.browser, `http://friend.example.com:${sites.port}`, daemon.url)).toBe('open');
    expect(await openBusFrom(sites.browser, `http://localhost:${sites.port}`, daemon.url)).toBe('open');
    expect(logs.lines.items.filter((l) => l.reason === 'origin_not_allowed')).toHaveLength(1);
  }, 60_000);
});

const NATS_ABSENT = natsServerAbsent();

describe.skipIf(CHROMIUM === undefined || NATS_ABSENT !== undefined)('the Cluster panel of a daemon on NATS, in Chromium (src/cluster/README.md)', () => {
  it('shows this daemon, the partitions each daemon owns, and which daemon runs each recent session', async () => {
    const nats = await startNatsServer();
    cleanups.push(() => nats.stop());
    const daemons: Daemon[] = [];
    for (const nodeId of ['node-a', 'node-b']) {
      const config = configWith({ bus: { port: 0 }, exampleSkills: false, log: { level: 'silent' }, inspector: { port: 0 }, cluster: { nats: nats.url, nodeId, partitions: 8, heartbeatMs: 100, deadAfterMs: 1_500 } });
      const daemon = await startDaemon(config, silentLogger());
      cleanups.push(() => daemon.close());
      daemons.push(daemon);
    }
    const [a, b] = daemons as [Daemon, Daemon];
    // Settled: both daemons read the same table, every partition owned by one of them, each owning some.
    const settled = (): boolean => {
      const [va, vb] = [a.cluster!.view(), b.cluster!.view()];
      return (
        va.owned.length > 0 && vb.owned.length > 0 && va.owned.length + vb.owned.length === 8 &&
        va.owners.every((owner, p) => owner === vb.owners[p] && owner === (va.owned.includes(p) ? 'node-a' : 'node-b')) &&
        va.waiting === 0 && vb.waiting === 0
      );
    };
    await expect.poll(settled, PATIENT).toBe(true);
    const user = await Probe.connect(a.url);
    cleanups.push(() => user.close());
    const sessions = ['hall', 'attic', 'porch', 'garage', 'cellar', 'study'];
    for (const session of sessions) user.utter('nobody answers this', { utteranceId: `u-${session}`, session: { session_id: session } });
    for (const session of sessions) await user.handled(`u-${session}`);

    const page = await browser!.newPage({ viewport: { width: 1500, height: 1000 } });
    cleanups.push(() => page.close());
    await page.goto(a.inspector!.url);
    await expect.poll(() => page.getByTestId('cluster').isVisible(), PATIENT).toBe(true);
    // Nothing moves partitions from here on (no daemon joins or leaves): the table read now is the one the page shows.
    expect(settled()).toBe(true);
    const view = a.cluster!.view();
    await expect.poll(() => page.locator('#cluster-summary').textContent(), PATIENT).toBe(
      `this daemon: node-a, owns ${view.owned.length} of 8 partitions · daemons: node-a, node-b · waiting for an owner: 0 · failovers: 0 · fenced: 0 · frames lost: 0 · invalid dropped: 0 · kept off NATS: ${view.keptHere}`,
    );
    const rows = (testId: string): Promise<string[][]> =>
      page.locator(`[data-testid=${testId}]`).evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '')));
    await expect.poll(() => rows('cluster-owner'), PATIENT).toEqual([
      ['node-a (this one)', view.owned.join(' ')],
      ['node-b', b.cluster!.view().owned.join(' ')],
    ]);
    const owners = view.owners;
    await expect.poll(async () => (await rows('cluster-session')).sort(), PATIENT).toEqual(
      sessions.map((session) => [session, String(partitionOf(session, 8)), owners[partitionOf(session, 8)] ?? 'none']).sort(),
    );
    expect(settled()).toBe(true);
    // Both daemons run some of these sessions (partitions are spread by session).
    expect(new Set(sessions.map((session) => owners[partitionOf(session, 8)]))).toEqual(new Set(['node-a', 'node-b']));
  }, 60_000);
});
