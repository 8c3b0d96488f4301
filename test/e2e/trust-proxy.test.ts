/**
 * WATCHER_TRUST_PROXY through the bridge as `npm run bridge` builds it (loadConfig, startBridge, on the shared dev
 * server): the request log's `clientIp` is the client X-Forwarded-For names only when the setting trusts the proxy
 * the request came through; otherwise it is the socket's peer, whatever the header says.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createMetrics } from '../../src/metrics.js';
import { startBridge } from '../../src/runtime.js';
import { freePort } from '../support/net.js';
import { LOOPBACK_AGENTS_ENV } from '../support/outbound.js';

const running: { stop(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((bridge) => bridge.stop()));
});

/** A bridge started from an environment with WATCHER_TRUST_PROXY as given (unset when undefined). */
async function bridgeTrusting(trustProxy: string | undefined) {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  const port = await freePort();
  const config = loadConfig({
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    PORT: String(port),
    WATCHER_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'watcher-trust-proxy-')),
    ...LOOPBACK_AGENTS_ENV,
    ...(trustProxy === undefined ? {} : { WATCHER_TRUST_PROXY: trustProxy }),
  });
  const bridge = await startBridge(config, config.temporal.address!, pino({ level: 'debug' }, sink), undefined, {
    metrics: createMetrics(),
  });
  running.push(bridge);

  /** The `clientIp` the request log wrote for one request carrying `forwardedFor` (if any). */
  return async function clientIpFor(forwardedFor?: string): Promise<unknown> {
    const before = lines.length;
    const answer = await fetch(`http://127.0.0.1:${port}/healthz`, {
      headers: forwardedFor === undefined ? {} : { 'X-Forwarded-For': forwardedFor },
    });
    expect(answer.status).toBe(200);
    await expect.poll(() => lines.slice(before).some((line) => line.msg === 'request')).toBe(true);
    return lines.slice(before).find((line) => line.msg === 'request')!.clientIp;
  };
}

const SOCKET_PEER = /^(::ffff:)?127\.0\.0\.1$/;

describe('WATCHER_TRUST_PROXY', () => {
  it.each<[setting: string, trustProxy: string | undefined, forwardedFor: (string | undefined)[]]>([
    ['unset', undefined, ['203.0.113.7', undefined]],
    ['false', 'false', ['203.0.113.7']],
    ['a CIDR range the proxy is not in', '10.0.0.0/8, fd00::/8', ['203.0.113.7']],
  ])('%s: X-Forwarded-For is ignored and the client is the socket peer', async (_setting, trustProxy, forwardedFor) => {
    const clientIpFor = await bridgeTrusting(trustProxy);

    for (const header of forwardedFor) expect(await clientIpFor(header)).toMatch(SOCKET_PEER);
  });

  it('loopback: the client is the one the proxy on the loopback interface names, and no hop further', async () => {
    const clientIpFor = await bridgeTrusting('loopback');

    expect(await clientIpFor('203.0.113.7')).toBe('203.0.113.7');
    expect(await clientIpFor('198.51.100.1, 203.0.113.7')).toBe('203.0.113.7');
    expect(await clientIpFor()).toMatch(SOCKET_PEER);
  });

  it('a hop count: that many proxies in front of the bridge are believed', async () => {
    const oneHop = await bridgeTrusting('1');
    const twoHops = await bridgeTrusting('2');

    expect(await oneHop('198.51.100.1, 203.0.113.7')).toBe('203.0.113.7');
    expect(await twoHops('198.51.100.1, 203.0.113.7')).toBe('198.51.100.1');
  });
});
