/**
 * The worker as the image runs it (Dockerfile): the workflows bundled beforehand by the bundle step, then
 * `node --import tsx src/worker.ts` with WATCHER_WORKFLOW_BUNDLE naming that file. An expectation raised through the
 * bridge lapses and its lapse reaches the agent, so the bundle holds the workflows and the worker runs them.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { getExpectationRecord } from '../../src/temporal/expectations.js';
import { lapsesFor, startTestAgent, type TestAgent } from '../support/agent.js';
import { writePrincipalsFile, type PrincipalSpec } from '../support/agents.js';
import { artifactUpdate, dueExpectation, send, startBridgeApp, unique, type BridgeApp } from '../support/bridge.js';
import { waitUntil } from '../support/faults.js';
import { LOOPBACK_AGENTS_ENV } from '../support/outbound.js';
import { spawnCommand, type Spawned } from '../support/processes.js';
import { useClient } from '../support/watcher.js';

const taskQueue = `workflow-bundle-${randomUUID()}`;
const client = useClient();
const dir = mkdtempSync(path.join(os.tmpdir(), 'watcher-bundle-'));
const bundleFile = path.join(dir, 'workflow-bundle.js');
let agent: TestAgent;
let bridge: BridgeApp;
let principalsFile: string;
const spawned: Spawned[] = [];

/** The image's worker command on the shared dev server and this file's task queue. */
function startImageWorker(workflowBundle: string): Spawned {
  const worker = spawnCommand(['node', '--import', 'tsx', 'src/worker.ts'], {
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: taskQueue,
    WATCHER_PRINCIPALS_FILE: principalsFile,
    WATCHER_WORKFLOW_BUNDLE: workflowBundle,
    WATCHER_DATA_DIR: dir,
    WATCHER_WORKER_METRICS_PORT: '0',
    WATCHER_LOG_LEVEL: 'info',
    ...LOOPBACK_AGENTS_ENV,
  });
  spawned.push(worker);
  return worker;
}

beforeAll(async () => {
  // The Dockerfile's bundle step, as it runs there.
  const bundling = spawnCommand(['node', '--import', 'tsx', 'src/temporal/bundle-cli.ts', bundleFile], {});
  spawned.push(bundling);
  expect(await bundling.exited, bundling.output()).toBe(0);

  agent = await startTestAgent();
  const principals: PrincipalSpec[] = [{ id: 'shipping-agent', roles: ['agent'], cardUrl: agent.cardUrl }];
  bridge = await startBridgeApp(client, taskQueue, principals);
  principalsFile = writePrincipalsFile(principals);
});

afterAll(async () => {
  await Promise.all(spawned.map((child) => child.stop('SIGKILL')));
  await bridge?.close();
  await agent?.close();
});

describe('a worker on the prebuilt workflow bundle', () => {
  it('runs the workflows of the bundle: a raised expectation lapses and its lapse reaches the agent', async () => {
    const worker = startImageWorker(bundleFile);
    await worker.waitFor(/worker running/, 120_000);
    const overdue = dueExpectation(`bundle-${unique()}`, new Date(Date.now() + 1_000));

    const raised = await send(`${bridge.url}/a2a/events`, {
      token: bridge.tokens['shipping-agent'],
      json: artifactUpdate({ expectations: [overdue] }),
    });
    const record = await waitUntil(
      'the lapse delivered',
      async () => {
        const read = await getExpectationRecord(client, overdue.expectationId);
        return read?.lapses[0]?.delivery.status === 'delivered' ? read : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );

    expect(raised.status).toBe(200);
    expect(record.state).toBe('lapsed');
    expect(lapsesFor(agent, overdue.expectationId)).toHaveLength(1);
    // Loaded, not bundled at start; and the bundle's tracing interceptors found their sink with tracing off.
    expect(worker.output()).toContain(`"workflowBundle":"${bundleFile}"`);
    expect(worker.output()).not.toMatch(/Ignoring WorkerOptions|unregistered external sink/);
  });

  it('refuses to start on a bundle that does not exist, naming the setting', async () => {
    const worker = startImageWorker(path.join(dir, 'missing.js'));

    const code = await worker.exited;

    expect(code).toBe(1);
    expect(worker.output()).toMatch(/WATCHER_WORKFLOW_BUNDLE: .*missing\.js does not exist/);
  });
});
