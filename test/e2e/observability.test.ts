/**
 * What an operator scrapes and reads from a worker process (`npm run worker` on the shared dev server): the
 * Temporal SDK's own metrics and the lapse counters on WATCHER_WORKER_METRICS_PORT, and JSON log lines that carry
 * the expectationId and workflowId of the lapse they are about. A real SDK agent receives (or refuses) the lapses.
 */
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Expectation } from '../../core/schemas/extension.js';
import { startExpectation } from '../../src/temporal/expectations.js';
import { expectationWorkflowId } from '../../core/ids.js';
import { startTestAgent, type TestAgent } from '../support/agent.js';
import { writePrincipalsFile, type PrincipalSpec } from '../support/agents.js';
import { expectationInput, shipmentDelivery } from '../support/fixtures.js';
import { freePort } from '../support/net.js';
import { LOOPBACK_AGENTS_ENV } from '../support/outbound.js';
import { spawnEntry, type Spawned } from '../support/processes.js';
import { useClient } from '../support/watcher.js';

const taskQueue = `observability-${randomUUID()}`;
let worker: Spawned;
let metricsUrl: string;
const client = useClient();
const agents: TestAgent[] = [];
/** The worker's principals file: each test's agent is added to it (the worker reloads it when it changes). */
let principalsFile: string;
const principals: PrincipalSpec[] = [];

beforeAll(async () => {
  principalsFile = writePrincipalsFile(principals);
  const port = await freePort();
  metricsUrl = `http://127.0.0.1:${port}/metrics`;
  worker = spawnEntry('src/worker.ts', {
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: taskQueue,
    WATCHER_WORKER_METRICS_PORT: String(port),
    WATCHER_LOG_LEVEL: 'info',
    WATCHER_PRINCIPALS_FILE: principalsFile,
    ...LOOPBACK_AGENTS_ENV,
  });
  await worker.waitFor(/"msg":"worker running"/, 110_000);
});

afterAll(async () => {
  await worker?.stop('SIGTERM');
  await Promise.all(agents.map((agent) => agent.close()));
});

/**
 * Raises an expectation for `agent`, due in two seconds with no grace, on the spawned worker's queue; the agent
 * is added to the worker's principals file under an id of its own first.
 */
async function raiseDueSoon(agent: TestAgent): Promise<Expectation> {
  const suffix = randomUUID().slice(0, 8);
  const agentId = `shipping-agent-${suffix}`;
  principals.push({ id: agentId, roles: ['agent'], cardUrl: agent.cardUrl });
  writePrincipalsFile(principals, { file: principalsFile });
  const due = new Date(Date.now() + 2_000);
  due.setUTCMilliseconds(0);
  const expectation = shipmentDelivery(`obs-${suffix}`, `S-${suffix}`, due.toISOString(), { grace: 'PT0S' });
  const origin = { taskId: `task-${suffix}`, contextId: `ctx-${suffix}` };
  const input = expectationInput(expectation, { id: agentId }, origin, taskQueue);
  await startExpectation(client, taskQueue, input);
  return expectation;
}

/** The value of the first sample of `metric` whose labels include `labels`, or undefined. */
function sample(text: string, metric: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    const match = /^(\w+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== metric) continue;
    const found = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => found[k] === v)) return Number(match[3]);
  }
  return undefined;
}

const scrape = async () => (await fetch(metricsUrl)).text();

/** The worker's JSON log lines so far. */
function logLines(): Record<string, any>[] {
  return worker
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, any>);
}

/** Polls the worker's metrics (for up to `timeout` ms) until `metric` counts one overdue lapse on this queue. */
async function expectOneOverdue(metric: string, timeout: number): Promise<void> {
  await expect
    .poll(async () => sample(await scrape(), metric, { lapse: 'overdue', task_queue: taskQueue }), { timeout })
    .toBe(1);
}

/** Polls the worker's log until a line `msg` shows, naming `expectation` and its workflow, with `fields`. */
async function expectLogged(msg: string, expectation: Expectation, fields: Record<string, unknown>): Promise<void> {
  await expect
    .poll(() => logLines().find((line) => line.msg === msg), { timeout: 15_000 })
    .toMatchObject({
      expectationId: expectation.expectationId,
      workflowId: expectationWorkflowId(expectation.expectationId),
      ...fields,
    });
}

describe('the worker process, observed', () => {
  it('serves the Temporal SDK’s own metrics for Prometheus', async () => {
    const text = await scrape();

    expect(text).toMatch(/^# TYPE temporal_\w+ /m);
    expect(sample(text, 'temporal_num_pollers', { task_queue: taskQueue })).toBeGreaterThan(0);
  });

  it('counts a delivered lapse by type and logs it with its expectationId and workflowId', async () => {
    const agent = await startTestAgent();
    agents.push(agent);

    const expectation = await raiseDueSoon(agent);
    await agent.waitForMessages(1, 45_000);

    await expectOneOverdue('watcher_lapses_total', 15_000);
    await expectLogged('lapse delivered', expectation, {
      level: 30,
      activityType: 'deliverLapse',
      lapse: 'overdue',
      lapseTaskId: agent.received[0]!.taskId,
    });
  });

  it('counts a delivery the agent refuses and logs the failure with its expectationId', async () => {
    const agent = await startTestAgent();
    agents.push(agent);
    agent.failNext(400);

    const expectation = await raiseDueSoon(agent);

    await expectOneOverdue('watcher_lapse_deliveries_failed_total', 45_000);
    await expectLogged('lapse delivery failed for good', expectation, {
      level: 50,
      err: expect.objectContaining({ message: expect.stringContaining('HTTP 400') }),
    });
  });

  it('stops at start, naming the variable, when the metrics port it was given is taken', async () => {
    const taken = net.createServer().listen(0, '127.0.0.1');
    await new Promise((resolve) => taken.once('listening', resolve));
    const port = (taken.address() as net.AddressInfo).port;

    const second = spawnEntry('src/worker.ts', {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_TASK_QUEUE: taskQueue,
      WATCHER_WORKER_METRICS_PORT: String(port),
      WATCHER_PRINCIPALS_FILE: principalsFile,
    });
    const code = await second.exited;
    taken.close();

    expect(code).toBe(1);
    expect(second.output()).toContain(`WATCHER_WORKER_METRICS_PORT=${port}: cannot serve the worker's metrics`);
  });
});
