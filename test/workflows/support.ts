/**
 * Shared setup of the time-skipping workflow tests: one test server and one worker per file (`useHarness`), the
 * real router activities, and a recording `deliverLapse` test activity (lapse delivery over A2A is tested in its
 * own tier).
 */
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, inject } from 'vitest';
import { LAPSE_UNAVAILABLE } from '../../activities/deliver-lapse.js';
import { createClientActivities } from '../../activities/client-calls.js';
import { LAPSE_REJECTED, type DeliverLapseInput, type DeliverLapseResult } from '../../workflows/activity-types.js';
import type { Expectation, Fact } from '../../core/schemas/extension.js';
import { Client, WorkflowNotFoundError } from '@temporalio/client';
import type { ExpectationRecord } from '../../core/schemas/record.js';
import {
  getExpectationRecord,
  recordFact,
  startExpectation,
  startExpectationWorkflow,
  storeFacts,
} from '../../src/temporal/expectations.js';
import { factRouterWorkflowId, routerTaskQueue } from '../../core/ids.js';
import { indexedValueType } from '../../src/temporal/search-attributes.js';
import type { ExpectationInput } from '../../workflows/messages.js';
import { allSearchAttributes } from '../../workflows/search-attributes.js';
import { defaultSettings, expectationInput, fact, shipmentExpectation } from '../support/fixtures.js';
import { unique } from '../support/ids.js';
import { until, untilRecord } from '../support/poll.js';

export const DAY = 86_400_000;
export const HOUR = 3_600_000;

/** An agent whose deliveries the test activity refuses as a 4xx would be. */
export const REJECTING_AGENT = 'rejecting-agent';

export interface TimeSkippingHarness {
  env: TestWorkflowEnvironment;
  /** A client that never moves the clock (only `env.sleep` does). */
  client: Client;
  taskQueue: string;
  /** Every call of the test `deliverLapse` activity, in order. */
  deliveries: DeliverLapseInput[];
  /**
   * Agents (by principal id) whose deliveries the test activity fails: `unavailable` as an agent that is down would
   * (retried), `rejected` as a 4xx would (not retried). Deleting an entry brings the agent back.
   */
  faults: Map<string, 'unavailable' | 'rejected'>;
  /**
   * How many reads of the routers' histories (`storedFacts`) fail from now on, each at once and not retried by its
   * local activity, as one that failed its whole budget does.
   */
  readsRefused: { remaining: number };
  /** A fresh id with a prefix, unique per test. */
  id(prefix: string): string;
  /** Raises an expectation with ids computed by core/ids.ts; `dueAt` etc. given as offsets from the server's now. */
  raise(
    expectation: Expectation,
    options?: Partial<Omit<ExpectationInput, 'expectation' | 'links'>>,
  ): Promise<ExpectationInput>;
  record(expectationId: string): Promise<ExpectationRecord>;
  /** Polls the record (without moving the clock) until `accept` holds; fails after 15 s of wall time. */
  until(expectationId: string, accept: (record: ExpectationRecord) => boolean): Promise<ExpectationRecord>;
  now(): Promise<number>;
  /** Moves the server's clock to `instantMs` (never backwards). */
  advanceTo(instantMs: number): Promise<void>;
  shutdown(): Promise<void>;
}

/**
 * The time-skipping server rejects undefined search attributes and does not implement ListSearchAttributes (so
 * the worker's idempotent registration cannot run there): add ours directly on its fresh namespace.
 */
async function addSearchAttributes(env: TestWorkflowEnvironment): Promise<void> {
  await env.connection.operatorService.addSearchAttributes({
    namespace: env.namespace ?? 'default',
    searchAttributes: Object.fromEntries(allSearchAttributes.map((key) => [key.name, indexedValueType[key.type]!])),
  });
}

/** What the harness raises `expectation` with: shipping-agent's, from task-1 in ctx-1, with the default settings. */
function harnessInput(expectation: Expectation, taskQueue: string): ExpectationInput {
  return expectationInput(expectation, { id: 'shipping-agent' }, { taskId: 'task-1', contextId: 'ctx-1' }, taskQueue);
}

/** Starts the time-skipping server and a worker on a unique task queue. */
export async function startHarness(): Promise<TimeSkippingHarness> {
  const env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path: inject('testServerPath') } },
  });
  await addSearchAttributes(env);
  // A plain client: the environment's own client unlocks time skipping while it awaits a result, and doing that
  // from activities or polls while the test also sleeps unbalances the test server's time lock.
  const client = new Client({ connection: env.connection, namespace: env.namespace ?? 'default' });
  const taskQueue = `workflows-${randomUUID()}`;
  const deliveries: DeliverLapseInput[] = [];
  const faults = new Map<string, 'unavailable' | 'rejected'>();
  const readsRefused = { remaining: 0 };
  const clientActivities = createClientActivities({ client });
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: { codePath: inject('workflowBundlePath') },
    activities: {
      ...clientActivities,
      async storedFacts(input: Parameters<typeof clientActivities.storedFacts>[0]) {
        if (readsRefused.remaining <= 0) return clientActivities.storedFacts(input);
        readsRefused.remaining--;
        throw ApplicationFailure.create({ message: 'the history service is unavailable', nonRetryable: true });
      },
      async deliverLapse(input: DeliverLapseInput): Promise<DeliverLapseResult> {
        deliveries.push(input);
        const fault = input.agent.id === REJECTING_AGENT ? 'rejected' : faults.get(input.agent.id);
        if (fault === 'rejected') {
          throw ApplicationFailure.create({ type: LAPSE_REJECTED, message: 'agent answered 400', nonRetryable: true });
        }
        if (fault === 'unavailable') {
          throw ApplicationFailure.create({
            type: LAPSE_UNAVAILABLE,
            message: 'connection refused',
            nonRetryable: false,
          });
        }
        return { taskId: `task-${input.messageId}`, warnings: [] };
      },
    },
  });
  // The routers run on their own queue, with their forwards' local activity, as src/temporal/worker.ts runs them.
  const routerWorker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue: routerTaskQueue(taskQueue),
    workflowBundle: { codePath: inject('workflowBundlePath') },
    activities: { forwardFacts: clientActivities.forwardFacts },
    enableNonLocalActivities: false,
  });
  const running = Promise.all([worker.run(), routerWorker.run()]);

  const harness: TimeSkippingHarness = {
    env,
    client,
    taskQueue,
    deliveries,
    faults,
    readsRefused,
    id: unique,
    async raise(expectation, options = {}) {
      const input: ExpectationInput = { ...harnessInput(expectation, taskQueue), ...options };
      // The bridge's clock is the server's: here the server's clock has been moved ahead of the wall clock.
      const serverNow = await env.currentTimeMs();
      const started = await startExpectation(client, taskQueue, input, { now: () => serverNow });
      if (started !== 'raised') throw new Error(`${expectation.expectationId} was not raised: ${started}`);
      return input;
    },
    async record(expectationId) {
      const record = await getExpectationRecord(client, expectationId);
      if (!record) throw new Error(`no record for ${expectationId}`);
      return record;
    },
    until: (expectationId, accept) =>
      untilRecord((id) => getExpectationRecord(client, id), expectationId, accept, {
        timeoutMs: 15_000,
        intervalMs: 50,
      }),
    now: () => env.currentTimeMs(),
    async advanceTo(instantMs) {
      const now = await env.currentTimeMs();
      if (instantMs > now) await env.sleep(instantMs - now);
    },
    async shutdown() {
      worker.shutdown();
      routerWorker.shutdown();
      await running;
      await env.teardown();
    },
  };
  return harness;
}

/**
 * The harness of one test file: started in `beforeAll`, shut down in `afterAll`. The object is filled in when the
 * hook has run, so it is used inside tests and hooks only.
 */
export function useHarness(): TimeSkippingHarness {
  const harness = {} as TimeSkippingHarness;
  let started: TimeSkippingHarness | undefined;
  beforeAll(async () => {
    started = await startHarness();
    Object.assign(harness, started);
  });
  afterAll(async () => {
    await started?.shutdown();
  });
  return harness;
}

/** A fact from the carrier's feed, received at the server's now unless `extra` says when (as a bridge stamps it). */
async function stampedFact(h: TimeSkippingHarness, factKey: string, observedAtMs: number, extra: Partial<Fact>) {
  const receivedAt = new Date(await h.now()).toISOString();
  return fact(factKey, {
    observedAt: new Date(observedAtMs).toISOString(),
    source: 'carrier-feed',
    receivedAt,
    ...extra,
  });
}

/** Reports a fact as a bridge does with `wait=true`: an update-with-start on its key's router, answered by a worker. */
export async function reportFact(
  h: TimeSkippingHarness,
  factKey: string,
  observedAtMs: number,
  extra: Partial<Fact> = {},
  factRetention = defaultSettings.factRetention,
): Promise<'recorded' | 'duplicate'> {
  return recordFact(h.client, h.taskQueue, await stampedFact(h, factKey, observedAtMs, extra), { factRetention });
}

/** Stores a fact as a bridge does without `wait`: one signal per router, stored by the server, no worker needed. */
export async function storeFact(
  h: TimeSkippingHarness,
  factKey: string,
  observedAtMs: number,
  extra: Partial<Fact> = {},
  factRetention = defaultSettings.factRetention,
): Promise<void> {
  await storeFacts(h.client, h.taskQueue, [await stampedFact(h, factKey, observedAtMs, extra)], { factRetention });
}

/**
 * Starts `expectation` as the bridge would, stamped `raisedAt` by a bridge clock `bridgeAheadMs` ahead of the server's
 * (`start`), but without its router subscription: nothing is forwarded to it, as behind a stuck router.
 */
export async function raiseUnsubscribed(
  h: TimeSkippingHarness,
  expectation: Expectation,
  start: number,
  bridgeAheadMs = 0,
) {
  const input = harnessInput(expectation, h.taskQueue);
  const started = await startExpectationWorkflow(h.client, h.taskQueue, input, { now: () => start + bridgeAheadMs });
  if (started !== 'raised') throw new Error(`${expectation.expectationId} was not raised: ${started}`);
}

/** The status name of a workflow, or 'NOT_FOUND'. */
export async function workflowStatus(h: TimeSkippingHarness, workflowId: string): Promise<string> {
  try {
    return (await h.client.workflow.getHandle(workflowId).describe()).status.name;
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return 'NOT_FOUND';
    throw error;
  }
}

/** Polls a workflow's status (without moving the clock) until it is `status`. */
export async function untilStatus(h: TimeSkippingHarness, workflowId: string, status: string): Promise<void> {
  await until(
    () => workflowStatus(h, workflowId),
    (current) => current === status,
    { timeoutMs: 15_000, intervalMs: 50, describe: (current) => `${workflowId} is ${current}, not ${status}` },
  );
}

/**
 * Raises a shipment expectation `<prefix>-…` due `dueInMs` after the server's now (`start`), and waits until its
 * record reads open.
 */
export async function raiseOpen(
  h: TimeSkippingHarness,
  prefix: string,
  dueInMs: number,
  extra: Partial<Expectation> = {},
): Promise<ExpectationInput & { start: number; id: string }> {
  const start = await h.now();
  const id = h.id(prefix);
  const input = await h.raise(shipmentExpectation(id, start, dueInMs, extra));
  await h.until(id, (r) => r.state === 'open');
  return { ...input, start, id };
}

/**
 * `make()` again until what it makes has a fact key whose router no earlier test of the file has started: a test that
 * starts a router with a state of its own needs a shard of the file's task queue that is still free.
 */
export async function onAnUnstartedRouter<T>(
  h: TimeSkippingHarness,
  make: () => T,
  factKeyOf: (made: T) => string,
): Promise<T> {
  for (;;) {
    const made = make();
    const router = factRouterWorkflowId(factKeyOf(made), h.taskQueue);
    if ((await workflowStatus(h, router)) === 'NOT_FOUND') return made;
  }
}
