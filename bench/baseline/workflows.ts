/**
 * Raw Temporal baselines, bundled apart from the watcher's workflows and run on their own task queue: the least a
 * Temporal application can do for each scenario, so that our figures read as ratios of what the server allows.
 */
import { condition, continueAsNew, defineSignal, proxyActivities, setHandler, sleep } from '@temporalio/workflow';
import type { BaselineActivities } from './activities.js';

/** Signal of the round-trip baseline. */
export const goSignal = defineSignal('go');

/** Signal of the fact-store baseline: one fact's key. */
export const factSignal = defineSignal<[string]>('fact');

const { fired } = proxyActivities<BaselineActivities>({ startToCloseTimeout: '30s' });

/** Raise baseline: starts and completes, nothing else. */
export async function noopWorkflow(): Promise<void> {}

/** Fact-to-satisfied baseline: waits for one signal and completes. */
export async function signalWorkflow(): Promise<void> {
  let signalled = false;
  setHandler(goSignal, () => {
    signalled = true;
  });
  await condition(() => signalled);
}

/** Lapse baseline: a timer until the shared instant, then a no-op activity that records when it ran. */
export async function timerWorkflow(id: string, dueMs: number): Promise<void> {
  await sleep(Math.max(dueMs - Date.now(), 1));
  await fired(id, dueMs);
}

/** Scale baseline: one timer months ahead, the least an open expectation could cost. */
export async function sleepWorkflow(dueMs: number): Promise<void> {
  await sleep(Math.max(dueMs - Date.now(), 1));
}

/**
 * Traffic baseline: one expectation at its least, waiting for one signal (its fact) until its deadline; past the
 * deadline without it, the no-op activity records when the lapse ran, and the workflow ends.
 */
export async function deadlineWorkflow(id: string, deadlineMs: number): Promise<void> {
  let signalled = false;
  setHandler(goSignal, () => {
    signalled = true;
  });
  if (await condition(() => signalled, Math.max(deadlineMs - Date.now(), 1))) return;
  await fired(id, deadlineMs);
}

/**
 * Feed-only traffic baseline: one of a fixed set of long-lived workflows that a fact is signalled-with-start to (by
 * its key's shard, as the watcher's routers), so that raw stores every fact too: in its history, nothing else. It
 * continues as new every 1,000 facts, as a router does on its event budget.
 */
export async function factStoreWorkflow(): Promise<void> {
  let stored = 0;
  setHandler(factSignal, () => {
    stored++;
  });
  await condition(() => stored >= 1_000);
  await continueAsNew<typeof factStoreWorkflow>();
}
