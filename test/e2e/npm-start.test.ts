/**
 * `npm start` as a user runs it: the embedded dev server, the worker and the bridge in one process, stopped by
 * SIGTERM, started again on the same data directory without losing anything.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { freePort, freePortPair, isListening } from '../support/net.js';
import { spawnEntry, type Spawned } from '../support/processes.js';

const running: Spawned[] = [];
afterAll(async () => {
  await Promise.all(running.map((p) => p.stop('SIGKILL')));
});

function start(script: string, env: Record<string, string>): Spawned {
  const spawned = spawnEntry(script, env);
  running.push(spawned);
  return spawned;
}

describe('npm start (embedded dev server)', () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'watcher-start-'));
  let temporalPort = 0;
  let bridgePort = 0;
  const probeId = `persistence-probe-${Date.now()}`;

  it('starts Temporal with its UI, the worker and the bridge, and prints where they are', async () => {
    temporalPort = await freePortPair();
    bridgePort = await freePort();
    const watcher = start('src/main.ts', {
      WATCHER_DATA_DIR: dataDir,
      PORT: String(bridgePort),
      WATCHER_EMBEDDED_TEMPORAL_PORT: String(temporalPort),
    });

    const [, token] = await watcher.waitFor(/admin token: (\S+)/);
    await watcher.waitFor(/Ctrl-C stops everything/);

    expect(watcher.output()).toContain(`bridge:      http://localhost:${bridgePort}`);
    expect(watcher.output()).toContain(`Temporal UI: http://127.0.0.1:${temporalPort + 1000}/namespaces/default/workflows`);
    expect((await fetch(`http://127.0.0.1:${bridgePort}/healthz`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${bridgePort}/readyz`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${temporalPort + 1000}/`)).status).toBe(200);
    const principals = JSON.parse(readFileSync(path.join(dataDir, 'principals.json'), 'utf8'));
    expect(principals.principals[0].tokenSha256).toBe(createHash('sha256').update(token!).digest('hex'));
    expect(JSON.stringify(principals)).not.toContain(token!);

    const connection = await Connection.connect({ address: `127.0.0.1:${temporalPort}` });
    try {
      const client = new Client({ connection });
      const ns = await connection.workflowService.describeNamespace({ namespace: 'default' });
      expect(Number(ns.config?.workflowExecutionRetentionTtl?.seconds)).toBeGreaterThanOrEqual(30 * 24 * 3600);
      const attributes = await connection.operatorService.listSearchAttributes({ namespace: 'default' });
      expect(Object.keys(attributes.customAttributes ?? {})).toEqual(
        expect.arrayContaining(['ExpectationKind', 'ExpectationSubject', 'ExpectationState', 'ExpectationAgent', 'ExpectationFactKey', 'ExpectationDueAt']),
      );
      // A workflow on a queue nobody polls: it stays open, so the restart below can find it.
      await client.workflow.start('probe', { taskQueue: 'nobody-polls-this', workflowId: probeId });
    } finally {
      await connection.close();
    }

    expect(await watcher.stop('SIGTERM')).toBe(0);
    expect(await isListening(temporalPort)).toBe(false);
    expect(await isListening(bridgePort)).toBe(false);
  });

  it('keeps what the first run recorded when started again on the same data directory', async () => {
    const watcher = start('src/main.ts', {
      WATCHER_DATA_DIR: dataDir,
      PORT: String(bridgePort),
      WATCHER_EMBEDDED_TEMPORAL_PORT: String(temporalPort),
    });
    await watcher.waitFor(/Ctrl-C stops everything/);

    expect(watcher.output()).not.toContain('admin token:');
    const connection = await Connection.connect({ address: `127.0.0.1:${temporalPort}` });
    try {
      const description = await new Client({ connection }).workflow.getHandle(probeId).describe();
      expect(description.status.name).toBe('RUNNING');
    } finally {
      await connection.close();
    }
    expect(await watcher.stop('SIGINT')).toBe(0);
  });
});

describe('npm run bridge against an existing cluster', () => {
  it('starts no server and is ready while Temporal answers', async () => {
    const port = await freePort();
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'watcher-bridge-'));
    const bridge = start('src/bridge.ts', {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      WATCHER_DATA_DIR: dataDir,
      PORT: String(port),
    });
    await bridge.waitFor(/bridge listening/);

    expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
    expect(bridge.output()).not.toContain('embedded');
    expect(await bridge.stop()).toBe(0);
  });

  it('answers /readyz 503 while Temporal is unreachable, and /healthz 200', async () => {
    const port = await freePort();
    const closed = await freePort();
    const bridge = start('src/bridge.ts', {
      TEMPORAL_ADDRESS: `127.0.0.1:${closed}`,
      WATCHER_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'watcher-bridge-')),
      PORT: String(port),
    });
    await bridge.waitFor(/bridge listening/);

    const started = Date.now();
    expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(503);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    expect(await bridge.stop()).toBe(0);
  });

  it('refuses to start the worker alone without TEMPORAL_ADDRESS, naming the variable', async () => {
    const worker = start('src/worker.ts', { WATCHER_DATA_DIR: os.tmpdir() });

    expect(await worker.exited).toBe(1);
    expect(worker.output()).toMatch(/TEMPORAL_ADDRESS: required by `npm run worker`/);
  });
});
