/**
 * mycroft.conf, the drop-in case end to end: a deployment's mycroft.conf names its messagebus
 * (ovos-wire-today mycroft.conf: websocket.host 0.0.0.0 as ovos-messagebus is often configured), loadConfig finds it
 * where ovos-config looks (a fake home and file system, never the real /etc or ~), and the daemon joins that bus
 * instead of serving one, without the example skills. A BusServer on an ephemeral port stands in for
 * ovos-messagebus. No sleeps: every wait is on a frame or a log line.
 */
import { afterEach, describe, expect, it } from 'vitest';

import { BusServer } from '../../src/bus/ws-server.js';
import { loadConfig } from '../../src/config/config.js';
import { startDaemon } from '../../src/daemon/daemon.js';
import { silentLogger } from '../../src/log/logger.js';
import { Probe, captureLogs } from '../integration/probe.js';

const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('daemon with a mycroft.conf', () => {
  it('ovos-wire-today mycroft.conf: joins the messagebus websocket.* names, without the example skills, and answers on it', async () => {
    const messagebus = await BusServer.start({ host: '127.0.0.1', port: 0, route: '/core', maxFrameBytes: 1 << 20, logger: silentLogger() });
    cleanups.push(() => messagebus.close());
    const files: Record<string, string> = {
      '/etc/mycroft/mycroft.conf': `{\n  // the image's system config\n  "websocket": {"host": "0.0.0.0", "port": ${messagebus.port}, "route": "/core"}\n}`,
    };
    const { config, mycroft } = loadConfig({
      argv: ['--log-level', 'info', '--inspector-port', '0', '--no-registry-file'],
      env: {},
      mycroftDiscovery: { home: '/home/ovos', readFile: (path) => files[path] },
    });
    expect(config.bus.url).toBe(`ws://127.0.0.1:${messagebus.port}/core`);
    expect(config.exampleSkills).toBe(false);
    expect(mycroft?.keys.get('bus.url')).toMatchObject({ files: ['/etc/mycroft/mycroft.conf'] });

    const { logger, lines } = captureLogs('info');
    const daemon = await startDaemon(config, logger);
    cleanups.push(() => daemon.close());
    expect(daemon.url).toBe(config.bus.url);
    expect(lines.items.find((line) => line.msg === 'connecting to an existing OVOS messagebus')).toMatchObject({ url: config.bus.url });
    expect(lines.items.some((line) => line.msg === 'OVOS bus listening' || line.msg === 'example skills connected')).toBe(false);

    const probe = await Probe.connect(messagebus.url);
    cleanups.push(() => probe.close());
    probe.utter('nobody here answers this', { utteranceId: 'mycroft-join-1', session: { session_id: 'join' }, lang: 'en-US' });
    await probe.handled('mycroft-join-1');
    expect(probe.typesOf('mycroft-join-1')).toContain('ovos.intent.unmatched');
  });
});
