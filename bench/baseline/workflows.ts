/**
 * Raw Temporal baselines, bundled apart from the watcher's workflows and run on their own task queue: the least a
 * Temporal application can do for each scenario, so that our figures read as ratios of what the server allows.
 */
import { condition, continueAsNew, defineSignal, proxyActivities, setHandler, sleep } from '@temporalio/workflow';
import type { BaselineActivities } from './activities.js';

/** The round-trip baseline's signal, and the fact-store baseline's (one fact's key). */
export const goSignal = defineSignal('go');
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

/** Traffic baseline: one expectation at its least, its fact a signal before its deadline, else a no-op activity. */
export async function deadlineWorkflow(id: string, deadlineMs: number): Promise<void> {
  let signalled = false;
  setHandler(goSignal, () => {
    signalled = true;
  });
  if (await condition(() => signalled, Math.max(deadlineMs - Date.now(), 1))) return;
  await fired(id, deadlineMs);
}

/**
 * Feed-only traffic baseline: one of a fixed set of long-lived workflows a fact is signalled-with-start to by its key's
 * shard, as the watcher's routers; it continues as new every 1,000 facts, as a router does on its event budget.
 */
export async function factStoreWorkflow(): Promise<void> {
  let stored = 0;
  setHandler(factSignal, () => {
    stored++;
  });
  await condition(() => stored >= 1_000);
  await continueAsNew<typeof factStoreWorkflow>();
}
