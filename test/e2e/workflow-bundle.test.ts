/**
 * The worker as the image runs it (Dockerfile): the workflows bundled beforehand by the bundle step, then
 * `node --import tsx src/worker.ts` with WATCHER_WORKFLOW_BUNDLE naming that file. An expectation raised through the
 * bridge lapses and its lapse reaches the agent, so the bundle holds the workflows and the worker runs them. With
 * tracing on, the worker loads the tracing bundle the step wrote beside it, and its workflows' spans are exported.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { getExpectationRecord } from '../../src/temporal/expectations.js';
import { lapsesFor, startTestAgent, type TestAgent } from '../support/agent.js';
import { writePrincipalsFile, type PrincipalSpec } from '../support/agents.js';
import { dueExpectation } from '../support/fixtures.js';
import { artifactUpdate, send, startBridgeApp, unique, type BridgeApp } from '../support/bridge.js';
import { waitUntil } from '../support/faults.js';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp.js';
import { LOOPBACK_AGENTS_ENV } from '../support/outbound.js';
import { spawnCommand, type Spawned } from '../support/processes.js';
import { useClient } from '../support/watcher.js';

const taskQueue = `workflow-bundle-${randomUUID()}`;
const client = useClient();
const dir = mkdtempSync(path.join(os.tmpdir(), 'watcher-bundle-'));
const bundleFile = path.join(dir, 'workflow-bundle.js');
const tracingBundleFile = path.join(dir, 'workflow-bundle.tracing.js');
let agent: TestAgent;
let bridge: BridgeApp;
let principals: PrincipalSpec[];
let principalsFile: string;
let receiver: OtlpReceiver | undefined;
const spawned: Spawned[] = [];

/** The image's worker command on the shared dev server and (unless told another) this file's task queue. */
function startImageWorker(workflowBundle: string, env: Record<string, string> = {}): Spawned {
  const worker = spawnCommand(['node', '--import', 'tsx', 'src/worker.ts'], {
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: taskQueue,
    WATCHER_PRINCIPALS_FILE: principalsFile,
    WATCHER_WORKFLOW_BUNDLE: workflowBundle,
    WATCHER_DATA_DIR: dir,
    WATCHER_WORKER_METRICS_PORT: '0',
    WATCHER_LOG_LEVEL: 'info',
    ...LOOPBACK_AGENTS_ENV,
    ...env,
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
  principals = [{ id: 'shipping-agent', roles: ['agent'], cardUrl: agent.cardUrl }];
  bridge = await startBridgeApp(client, taskQueue, principals);
  principalsFile = writePrincipalsFile(principals);
});

afterAll(async () => {
  await Promise.all(spawned.map((child) => child.stop('SIGKILL')));
  await bridge?.close();
  await agent?.close();
  await receiver?.close();
});

/** Raises an expectation due in a second through `through` and resolves once its lapse reached the agent. */
async function raiseUntilLapsed(through: BridgeApp) {
  const overdue = dueExpectation(`bundle-${unique()}`, new Date(Date.now() + 1_000));
  const raised = await send(`${through.url}/a2a/events`, {
    token: through.tokens['shipping-agent'],
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
  return { overdue, raised, record };
}

describe('a worker on the prebuilt workflow bundle', () => {
  it('runs the workflows of the bundle: a raised expectation lapses and its lapse reaches the agent', async () => {
    const worker = startImageWorker(bundleFile);
    await worker.waitFor(/worker running/, 120_000);

    const { overdue, raised, record } = await raiseUntilLapsed(bridge);

    expect(raised.status).toBe(200);
    expect(record.state).toBe('lapsed');
    expect(lapsesFor(agent, overdue.expectationId)).toHaveLength(1);
    // Loaded, not bundled at start; and the bundle's tracing interceptors found their sink with tracing off.
    expect(worker.output()).toContain(`"workflowBundle":"${bundleFile}"`);
    expect(worker.output()).not.toMatch(/Ignoring WorkerOptions|unregistered external sink/);
  });

  it('writes the workflows alone, and beside them a tracing bundle that alone holds the tracing interceptors', () => {
    // A worker without tracing should not run the interceptors: they cost about half of its workflow tasks' CPU.
    const plain = readFileSync(bundleFile, 'utf8');
    const traced = readFileSync(tracingBundleFile, 'utf8');

    expect(plain).toContain('expectationWorkflow');
    expect(traced).toContain('expectationWorkflow');
    expect(plain).not.toContain('@temporalio/interceptors-opentelemetry/lib/');
    expect(traced).toContain('interceptors-opentelemetry/lib/workflow-interceptors');
  });

  it('with tracing on, loads the tracing bundle beside it, and the workflows it runs export their spans', async () => {
    receiver = await startOtlpReceiver();
    const tracedQueue = `${taskQueue}-traced`;
    const tracedBridge = await startBridgeApp(client, tracedQueue, principals);
    try {
      const worker = startImageWorker(bundleFile, {
        TEMPORAL_TASK_QUEUE: tracedQueue,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      });
      await worker.waitFor(/worker running/, 120_000);

      const { overdue, record } = await raiseUntilLapsed(tracedBridge);

      expect(record.state).toBe('lapsed');
      expect(lapsesFor(agent, overdue.expectationId)).toHaveLength(1);
      expect(worker.output()).toContain(`"workflowBundle":"${tracingBundleFile}"`);
      // The span of the workflow scheduling its delivery comes from the bundle's interceptors, in the workflow sandbox.
      await expect
        .poll(() => receiver!.spans.find((s) => s.name === 'StartActivity:deliverLapse')?.service, {
          timeout: 30_000,
          interval: 250,
        })
        .toBe('expectations-watcher-worker');
      expect(worker.output()).not.toMatch(/unregistered external sink/);
    } finally {
      await tracedBridge.close();
    }
  });

  it('refuses to start on a bundle that does not exist, naming the setting', async () => {
    const worker = startImageWorker(path.join(dir, 'missing.js'));

    const code = await worker.exited;

    expect(code).toBe(1);
    expect(worker.output()).toMatch(/WATCHER_WORKFLOW_BUNDLE: .*missing\.js does not exist/);
  });

  it('with tracing on, refuses to start when the tracing bundle is missing, naming the file it looked for', async () => {
    const lone = path.join(dir, 'lone', 'workflow-bundle.js');
    mkdirSync(path.dirname(lone));
    copyFileSync(bundleFile, lone);
    const worker = startImageWorker(lone, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1' });

    const code = await worker.exited;

    expect(code).toBe(1);
    expect(worker.output()).toMatch(
      /WATCHER_WORKFLOW_BUNDLE: with tracing on .*lone\/workflow-bundle\.tracing\.js, the tracing bundle .*does not exist/,
    );
  });
});
