/**
 * `npm start` as a user runs it: the embedded dev server, the worker and the bridge in one process, stopped by
 * SIGTERM, started again on the same data directory without losing anything; not ready once its worker stopped.
 * `npm run bridge` alone: ready only while a worker polls its task queue.
 */
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { freePort, freePortPair, isListening } from '../support/net.js';
import { spawnCommand, spawnEntry, type Spawned } from '../support/processes.js';
import { startWatcherWorker } from '../support/watcher.js';

const running: Spawned[] = [];
afterAll(async () => {
  await Promise.all(running.map((p) => p.stop('SIGKILL')));
});

function start(script: string, env: Record<string, string>): Spawned {
  const spawned = spawnEntry(script, env);
  running.push(spawned);
  return spawned;
}

/** `GET /readyz` of the bridge on `port`: its status and JSON body. */
async function readyz(port: number): Promise<{ status: number; body: any }> {
  const response = await fetch(`http://127.0.0.1:${port}/readyz`);
  return { status: response.status, body: await response.json() };
}

/** True while any process of the group a spawned entry point leads is alive (signal 0 only checks). */
function groupAlive(spawned: Spawned): boolean {
  try {
    process.kill(-spawned.child.pid!, 0);
    return true;
  } catch {
    return false;
  }
}

describe('the npm scripts', () => {
  it('run node itself with tsx as a loader, the early signal catcher first, so that a signal reaches the watcher and not a launcher relaying it', () => {
    const { scripts } = JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> };

    // tsx's own CLI relays signals to its child and exits 143 if the child has not answered within 60 ms;
    // src/early-signals.mjs keeps a signal that comes while Node and tsx start, before src/lifecycle.ts runs.
    expect(scripts.start).toBe('node --import ./src/early-signals.mjs --import tsx dev/start.ts');
    expect(scripts.worker).toBe('node --import ./src/early-signals.mjs --import tsx src/worker.ts');
    expect(scripts.bridge).toBe('node --import ./src/early-signals.mjs --import tsx src/bridge.ts');
    expect(scripts.cluster).toBe('node --import ./src/early-signals.mjs --import tsx dev/cluster/main.ts');
  });
});

describe('npm start stopped by SIGTERM during start-up', () => {
  // The moments of start-up a signal can fall in: loading the modules, the dev server starting, the worker
  // bundling, the bridge binding. Each must stop what is up and exit 0, leaving no process and no port behind.
  // Node's own boot, before any script runs, is the one window no program can close; the first moment is right after
  // it, when the early catcher is in place and tsx has not even started (a preload of the test's says when).
  const moments: [string, RegExp][] = [
    ['while node is still loading the modules', /preload: early signal catcher in place/],
    ['while the embedded dev server starts', /starting the embedded Temporal dev server/],
    ['while the worker starts', /"msg":"starting the worker"/],
    ['while the bridge starts', /"msg":"worker running"/],
  ];
  it.each(moments)('exits 0 and leaves nothing running %s', async (_moment, after) => {
    const temporalPort = await freePortPair();
    const bridgePort = await freePort();
    // What `npm start` runs, with the test's announcing preload between the early catcher and tsx.
    const watcher = spawnCommand(
      [
        process.execPath,
        '--import',
        './src/early-signals.mjs',
        '--import',
        './test/support/preload/announce.mjs',
        '--import',
        'tsx',
        'dev/start.ts',
      ],
      {
        WATCHER_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'watcher-start-signal-')),
        PORT: String(bridgePort),
        WATCHER_EMBEDDED_TEMPORAL_PORT: String(temporalPort),
      },
    );
    running.push(watcher);
    await watcher.waitFor(after);

    expect(await watcher.stop('SIGTERM')).toBe(0);
    if (after.source.startsWith('preload'))
      expect(watcher.output()).not.toContain('starting the embedded Temporal dev server');
    expect(await isListening(temporalPort)).toBe(false);
    expect(await isListening(bridgePort)).toBe(false);
    await expect.poll(() => groupAlive(watcher), { timeout: 5_000 }).toBe(false);
  });
});

describe('npm start (embedded dev server)', () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'watcher-start-'));
  let temporalPort = 0;
  let bridgePort = 0;
  const probeId = `persistence-probe-${Date.now()}`;

  it('starts Temporal with its UI, the worker and the bridge, and prints where they are', async () => {
    temporalPort = await freePortPair();
    bridgePort = await freePort();
    const watcher = start('dev/start.ts', {
      WATCHER_DATA_DIR: dataDir,
      PORT: String(bridgePort),
      WATCHER_EMBEDDED_TEMPORAL_PORT: String(temporalPort),
    });

    const [, token] = await watcher.waitFor(/admin token: (\S+)/);
    await watcher.waitFor(/Ctrl-C stops everything/);

    expect(watcher.output()).toContain(`bridge:      http://localhost:${bridgePort}`);
    expect(watcher.output()).toContain(
      `Temporal UI: http://127.0.0.1:${temporalPort + 1000}/namespaces/default/workflows`,
    );
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
        expect.arrayContaining([
          'ExpectationKind',
          'ExpectationSubject',
          'ExpectationState',
          'ExpectationAgent',
          'ExpectationFactKey',
          'ExpectationDueAt',
        ]),
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
    const watcher = start('dev/start.ts', {
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

describe('npm start when its worker stops', () => {
  it('answers /readyz 503 naming the stopped worker, while the bridge still runs and Temporal answers', async () => {
    const temporalPort = await freePortPair();
    const bridgePort = await freePort();
    const watcher = start('dev/start.ts', {
      WATCHER_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'watcher-start-worker-')),
      PORT: String(bridgePort),
      WATCHER_EMBEDDED_TEMPORAL_PORT: String(temporalPort),
      WATCHER_WORKFLOW_BUNDLE: inject('workflowBundlePath'),
      WATCHER_WORKER_METRICS_PORT: '0',
    });
    await watcher.waitFor(/Ctrl-C stops everything/);
    const before = await readyz(bridgePort);

    // The Temporal SDK's runtime drains every worker of the process on SIGUSR2 (one of its shutdown signals); the
    // watcher's own lifecycle does not stop on it, so the bridge stays up with no worker behind it.
    watcher.child.kill('SIGUSR2');
    await watcher.waitFor(/"msg":"the worker stopped"/);
    const after = await readyz(bridgePort);

    expect(before).toEqual({ status: 200, body: { status: 'ready', temporal: 'reachable', worker: 'running' } });
    expect(after).toEqual({
      status: 503,
      body: {
        type: 'urn:expectations-watcher:problem:worker-unavailable',
        title: 'No worker polls the task queue',
        status: 503,
        detail:
          'no worker polls expectations: the worker of this process is stopped, so raised expectations would never progress',
      },
    });
    expect((await fetch(`http://127.0.0.1:${bridgePort}/healthz`)).status).toBe(200);
    expect(await watcher.stop('SIGTERM')).toBe(0);
  });
});

describe('npm run bridge against an existing cluster', () => {
  it('starts no server, and is ready only once a worker polls its task queue', async () => {
    const port = await freePort();
    const taskQueue = `bridge-alone-${randomUUID()}`;
    const bridge = start('src/bridge.ts', {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_TASK_QUEUE: taskQueue,
      WATCHER_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'watcher-bridge-')),
      PORT: String(port),
    });
    await bridge.waitFor(/bridge listening/);
    const alone = await readyz(port);

    const worker = await startWatcherWorker(taskQueue);
    try {
      // DescribeTaskQueue answers are reused for 5 s: the worker shows within that.
      await expect.poll(async () => (await readyz(port)).status, { timeout: 30_000, interval: 500 }).toBe(200);
      expect((await readyz(port)).body).toEqual({ status: 'ready', temporal: 'reachable', worker: 'polling' });
    } finally {
      await worker.stop();
    }

    expect(alone.status).toBe(503);
    expect(alone.body).toMatchObject({
      type: 'urn:expectations-watcher:problem:worker-unavailable',
      detail: `no worker polls ${taskQueue}: Temporal saw no poller of its workflow tasks in the last 120 s, so raised expectations would never progress`,
    });
    expect(bridge.output()).not.toContain('embedded');
    expect(await bridge.stop()).toBe(0);
  });

  it('writes short readable log lines on a terminal and JSON lines into a pipe', async () => {
    const env = {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      WATCHER_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'watcher-bridge-')),
    };
    const piped = start('src/bridge.ts', { ...env, PORT: String(await freePort()) });
    // script(1) gives the bridge a pseudo-terminal as stdout, as a person's shell does.
    const port = await freePort();
    const command = `${process.execPath} --import ./src/early-signals.mjs --import tsx src/bridge.ts`;
    const onTerminal = spawnCommand(['script', '-qefc', command, '/dev/null'], {
      ...env,
      PORT: String(port),
      TERM: 'dumb',
    });
    running.push(onTerminal);

    await piped.waitFor(/"msg":"bridge listening"/);
    await onTerminal.waitFor(/\d\d:\d\d:\d\d INFO {2}bridge listening url=http:\/\/localhost:\d+/);
    expect(onTerminal.output()).not.toContain('"msg"');
    expect(await piped.stop()).toBe(0);
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

  it("refuses to start the product's whole watcher (src/main.ts) without TEMPORAL_ADDRESS: the embedded server is npm start's", async () => {
    const watcher = start('src/main.ts', { WATCHER_DATA_DIR: os.tmpdir() });

    expect(await watcher.exited).toBe(1);
    expect(watcher.output()).toMatch(
      /TEMPORAL_ADDRESS: required by src\/main\.ts, .*`npm start` runs the embedded server/,
    );
    expect(watcher.output()).not.toContain('starting the embedded Temporal dev server');
  });
});
