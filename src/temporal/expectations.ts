/**
 * The client-side operations the HTTP bridge calls: raise an expectation, read its record, record a fact, withdraw.
 * Every workflow id comes from core/ids.ts; every signal, query and update from workflows/messages.ts; the UI texts
 * from workflows/ui-text.ts.
 */
import {
  WithStartWorkflowOperation,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  type Client,
} from '@temporalio/client';
import { shardOf, subjectShardOf } from '../../core/fact-shards.js';
import type { Fact } from '../../core/schemas/extension.js';
import type { ExpectationRecord } from '../../core/schemas/record.js';
import type { expectationWorkflow } from '../../workflows/expectation.js';
import type { factRouterWorkflow } from '../../workflows/fact-router.js';
import { initialRecord } from '../../workflows/expectation-machine.js';
import {
  recordFactUpdate,
  factsSignal,
  factTakenOf,
  type FactBatch,
  type SubjectFact,
  type FactRouterMemo,
  takeFactUpdate,
  withdrawUpdate,
  type FactTaken,
  type ExpectationInput,
  type ExpectationMemo,
  type WithdrawRequest,
} from '../../workflows/messages.js';
import {
  ExpectationAgent,
  ExpectationDueAt,
  ExpectationFactKey,
  ExpectationKind,
  ExpectationState,
  ExpectationSubject,
} from '../../workflows/search-attributes.js';
import { expectationDetails, expectationSummary } from '../../workflows/ui-text.js';
import {
  expectationWorkflowId,
  factRouterWorkflowId,
  keywordValue,
  routerWorkflowId,
  subjectKey,
} from '../../core/ids.js';
import { groupBy, routerStart, subscribeAllToRouters } from './registration.js';
import { RouterSignals, type RouterBatch } from './router-signals.js';

/** How a raise starts: 'exists' when the id is taken (running or closed); `now` is the raise instant's clock. */
type Start = (
  client: Client,
  taskQueue: string,
  input: ExpectationInput,
  options?: { now?: () => number },
) => Promise<'raised' | 'exists'>;

/**
 * Raises an expectation (docs/raise-path.md): starts its workflow, then subscribes it to its fact router, so that
 * when this returns 'raised' every fact stored afterwards reaches it. An id already used
 * (running or closed) answers 'exists' and starts nothing; `registerExpectation` completes an interrupted raise.
 */
export const startExpectation: Start = async (client, taskQueue, input, options = {}) => {
  if (!(await withdrawSuperseded(client, input))) {
    throw new Error(
      `${input.expectation.supersedes} was superseded by another expectation or has ended; ${input.expectation.expectationId} was not started`,
    );
  }
  const outcome = await startExpectationWorkflow(client, taskQueue, input, options);
  if (outcome === 'raised') await registerExpectation(client, taskQueue, input);
  return outcome;
};

/** Withdraws the expectation `input` supersedes, before its start; true when `input` may start. */
// One update: the superseded workflow decides, so of concurrent supersedes of one expectation exactly one wins.
export async function withdrawSuperseded(client: Client, input: ExpectationInput): Promise<boolean> {
  const { expectation: e, links } = input;
  if (e.supersedes === undefined) return true;
  const supersededBy = { expectationId: e.expectationId, workflowId: links.self };
  const outcome = await withdrawExpectation(client, e.supersedes, {
    reason: `superseded by ${e.expectationId}`,
    supersededBy,
  });
  if (outcome === 'withdrawn') return true;
  return (await getExpectationRecord(client, e.supersedes))?.supersededBy === e.expectationId;
}

/**
 * The start alone: `registerExpectations` must follow before the raise is answered. The bridge starts the
 * expectations of one request together, then subscribes them all, one call per router.
 */
export const startExpectationWorkflow: Start = async (client, taskQueue, input, options = {}) => {
  const e = input.expectation;
  const now = options.now ?? Date.now;
  // The agent by its principal id only: whatever a caller passes, no card URL or credential enters Temporal. The
  // record starts in the memo, so that it is read without a worker from the first instant (ExpectationMemo).
  const registered: ExpectationInput = {
    ...input,
    agent: { id: input.agent.id },
    raisedAt: new Date(now()).toISOString(),
  };
  const memo: ExpectationMemo = { expectationId: e.expectationId, record: initialRecord(registered), dependents: 0 };
  try {
    await client.workflow.start<typeof expectationWorkflow>('expectationWorkflow', {
      workflowId: input.links.self,
      taskQueue,
      args: [registered],
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      // The id as raised, for lists (a long id's workflow id is a hash, core/ids.ts), and the record.
      memo: { ...memo },
      typedSearchAttributes: [
        { key: ExpectationKind, value: e.kind },
        { key: ExpectationSubject, value: subjectKey(e.subject) },
        { key: ExpectationState, value: 'open' },
        { key: ExpectationAgent, value: input.agent.id },
        { key: ExpectationFactKey, value: keywordValue(e.satisfiedBy.factKey) },
        { key: ExpectationDueAt, value: new Date(e.dueAt) },
      ],
      staticSummary: expectationSummary(e),
      staticDetails: expectationDetails(input, subjectKey(e.subject)),
    });
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) return 'exists';
    throw error;
  }
  return 'raised';
};

/** Subscribes a raised expectation to its router; idempotent, so a re-delivered raise completes an interrupted one. */
export function registerExpectation(client: Client, taskQueue: string, input: ExpectationInput): Promise<void> {
  return registerExpectations(client, taskQueue, [input]);
}

/** Subscribes raised expectations to their routers, one call per router (registration.ts). Idempotent. */
export function registerExpectations(
  client: Client,
  taskQueue: string,
  inputs: readonly ExpectationInput[],
): Promise<void> {
  const registrations = inputs.map(({ expectation: e, links, settings }) => ({
    subscriber: links.self,
    factRouter: links.factRouter,
    factKey: e.satisfiedBy.factKey,
    retention: settings.factRetention,
  }));
  return subscribeAllToRouters(client, taskQueue, registrations);
}

/**
 * The memo an expectation workflow keeps (ExpectationMemo), from DescribeWorkflowExecution: served by the Temporal
 * server alone, with no worker and no billable action, running or closed. Undefined when there is no such workflow,
 * or when it ended without its record (terminated before its first task, or failed): nothing trustworthy to show.
 */
export async function getExpectationMemo(client: Client, expectationId: string): Promise<ExpectationMemo | undefined> {
  return (await describeMemo(client, expectationId))?.memo;
}

/** The memo, and whether the workflow has completed (its result is then the last record). */
async function describeMemo(
  client: Client,
  expectationId: string,
): Promise<{ memo: ExpectationMemo; completed: boolean } | undefined> {
  let described;
  try {
    described = await client.workflow.getHandle(expectationWorkflowId(expectationId)).describe();
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return undefined;
    throw error;
  }
  const memo = described.memo as Partial<ExpectationMemo> | undefined;
  if (!memo?.record) return undefined;
  const status = described.status.name;
  if (status !== 'RUNNING' && status !== 'COMPLETED' && status !== 'CONTINUED_AS_NEW') return undefined;
  return {
    memo: { expectationId: memo.expectationId ?? expectationId, record: memo.record, dependents: memo.dependents ?? 0 },
    completed: status === 'COMPLETED',
  };
}

/**
 * The record, read without a worker; undefined when unknown. A completed run's record is its result, one more server
 * read: the workflow does not write its close into the memo.
 */
export async function getExpectationRecord(
  client: Client,
  expectationId: string,
): Promise<ExpectationRecord | undefined> {
  const described = await describeMemo(client, expectationId);
  if (!described?.completed) return described?.memo.record;
  try {
    return (await client.workflow.getHandle(expectationWorkflowId(expectationId)).result()) as ExpectationRecord;
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return described.memo.record;
    throw error;
  }
}

/** What recording a fact found out. */
export interface RecordedFact {
  result: 'recorded' | 'duplicate';
  /**
   * False when the fact was recorded and no running expectation waits on its key: it is kept for expectations raised
   * later (an early fact), or dropped with a zero retention. True otherwise, and when a router of a worker from
   * before `tellUnawaited` answered (it cannot tell).
   */
  awaited: boolean;
  /** The workflow ids of the expectations the new fact was sent on to, when asked for (`listForwarded`). */
  forwardedTo?: string[];
}

/** How many expectations are anchored on a running expectation, from its memo; 0 when it does not run. */
export async function dependentCount(client: Client, expectationId: string): Promise<number> {
  return (await getExpectationMemo(client, expectationId))?.dependents ?? 0;
}

/** A fact router's memo (the keys near their bound), from DescribeWorkflowExecution; undefined before it first ran. */
export async function getFactRouterMemo(client: Client, workflowId: string): Promise<FactRouterMemo | undefined> {
  try {
    const memo = (await client.workflow.getHandle(workflowId).describe()).memo as Partial<FactRouterMemo> | undefined;
    return { crowded: memo?.crowded ?? {} };
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return undefined;
    throw error;
  }
}

/** The ids of the workflows a visibility query lists, at most `max` (no worker, no billable action). */
export async function workflowIdsOf(client: Client, query: string, max: number): Promise<Set<string>> {
  const ids = new Set<string>();
  for await (const execution of client.workflow.list({ query, pageSize: Math.min(max, 1_000) })) {
    ids.add(execution.workflowId);
    if (ids.size >= max) break;
  }
  return ids;
}

/**
 * Whether the expectation `workflowId` has ended (closed, or its state search attribute neither open nor lapsed):
 * a DescribeWorkflowExecution (no worker, no billable action). One not started yet has not.
 */
export async function hasEnded(client: Client, workflowId: string): Promise<boolean> {
  try {
    const described = await client.workflow.getHandle(workflowId).describe();
    if (described.status.name !== 'RUNNING') return true;
    const state = described.typedSearchAttributes.get(ExpectationState);
    return state !== undefined && state !== 'open' && state !== 'lapsed';
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return false;
    throw error;
  }
}

/** Whether `workflowId` has a running execution: a DescribeWorkflowExecution (no worker, no billable action). */
export async function isRunning(client: Client, workflowId: string): Promise<boolean> {
  try {
    return (await client.workflow.getHandle(workflowId).describe()).status.name === 'RUNNING';
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return false;
    throw error;
  }
}

/** Stores facts in the routers of their keys and subjects, one signal-with-start per router (DESIGN 3.2), no worker. */
export async function storeFacts(
  client: Client,
  taskQueue: string,
  facts: readonly Fact[],
  settings: { factRetention: string; signalDeadlineMs?: number },
  { keys = true }: { keys?: boolean } = {},
): Promise<void> {
  const entries: Array<{ shard: number; fact?: Fact; subject?: SubjectFact }> = [];
  const stampedAt = new Date().toISOString();
  for (const fact of facts) {
    if (keys)
      entries.push({ shard: shardOf(fact.factKey), fact: { ...fact, receivedAt: fact.receivedAt ?? stampedAt } });
    if (fact.subject) {
      const { factKey, observedAt, receivedAt } = fact;
      const subject = { subject: { type: fact.subject.type, id: fact.subject.id }, factKey, observedAt };
      entries.push({
        shard: subjectShardOf(fact.subject),
        subject: { ...subject, receivedAt: receivedAt ?? stampedAt },
      });
    }
  }
  const retention = settings.factRetention;
  const signals = routerSignalsOf(client, taskQueue, settings.signalDeadlineMs ?? ROUTER_SIGNAL_DEADLINE_MS);
  await Promise.all(
    [...groupBy(entries, (entry) => String(entry.shard))].map(([, group]) => {
      const shard = group[0]!.shard;
      return signals.send(routerWorkflowId(shard, taskQueue), shard, {
        facts: group.flatMap((entry) => (entry.fact ? [entry.fact] : [])),
        subjects: group.flatMap((entry) => (entry.subject ? [entry.subject] : [])),
        retention,
      });
    }),
  );
}

/**
 * How long one router signal may take, whoever's requests it carries, unless the caller says (the bridge passes its
 * WATCHER_TEMPORAL_WAIT): the default of that setting.
 */
const ROUTER_SIGNAL_DEADLINE_MS = 30_000;

const routerSignals = new WeakMap<Client, Map<string, RouterSignals>>();

/**
 * The client's group commit of router signals on `taskQueue` (router-signals.ts), each signal given `deadlineMs`: one
 * per client, task queue and deadline.
 */
function routerSignalsOf(client: Client, taskQueue: string, deadlineMs: number): RouterSignals {
  let queues = routerSignals.get(client);
  if (!queues) routerSignals.set(client, (queues = new Map()));
  const key = `${deadlineMs} ${taskQueue}`;
  let signals = queues.get(key);
  if (!signals) {
    // Sent outside any one request's deadline and abort signal: the signal carries other requests' facts too.
    const signal = async (workflowId: string, shard: number, batch: RouterBatch) => {
      await client.withDeadline(Date.now() + deadlineMs, () =>
        client.withAbortSignal(new AbortController().signal, () =>
          client.workflow.signalWithStart<typeof factRouterWorkflow, [FactBatch]>('factRouterWorkflow', {
            workflowId,
            ...routerStart(taskQueue, shard, batch.retention),
            signal: factsSignal,
            signalArgs: [batch],
          }),
        ),
      );
    };
    queues.set(key, (signals = new RouterSignals(signal)));
  }
  return signals;
}

/**
 * Records a fact in its key's router (an update, answered by a worker: whether it was new, and who it went to; the
 * first fact of a router starts it), then stores it on its subject's router unless it was a re-delivery. Nothing else
 * is started, whether anyone waits on the key or not. Idempotent: a retry completes what an interrupted call left.
 */
export async function recordFactRouted(
  client: Client,
  taskQueue: string,
  fact: Fact,
  settings: { factRetention: string },
  { listForwarded = false }: { listForwarded?: boolean } = {},
): Promise<RecordedFact> {
  const workflowId = factRouterWorkflowId(fact.factKey, taskQueue);
  const shard = shardOf(fact.factKey);
  // Listed, the forwarded expectations get the fact from the caller first (awaitFactTaken), the router's signal later.
  const options = {
    tellUnawaited: true,
    retention: settings.factRetention,
    ...(listForwarded ? { listForwarded, callerDelivers: true } : {}),
  };
  // A new operation per attempt: an executed one cannot be reused. The start happens once per router, ever.
  const answer = await resentIfAborted(() =>
    client.workflow.executeUpdateWithStart(recordFactUpdate, {
      args: [fact, options],
      startWorkflowOperation: new WithStartWorkflowOperation<typeof factRouterWorkflow>('factRouterWorkflow', {
        workflowId,
        ...routerStart(taskQueue, shard, settings.factRetention),
        workflowIdConflictPolicy: 'USE_EXISTING',
      }),
    }),
  );
  const duplicate = answer === 'duplicate' || (typeof answer === 'object' && answer.result === 'duplicate');
  if (fact.subject && !duplicate) await storeFacts(client, taskQueue, [fact], settings, { keys: false });
  if (typeof answer === 'object') {
    return answer.result === 'duplicate'
      ? { result: 'duplicate', awaited: true }
      : { result: answer.result, awaited: true, forwardedTo: answer.forwardedTo };
  }
  return answer === 'unawaited' ? { result: 'recorded', awaited: false } : { result: answer, awaited: true };
}

/** Waits until `deadlineMs` for the expectations a fact was forwarded to to take it; one that does not is left out. */
export async function awaitFactTaken(
  client: Client,
  workflowIds: string[],
  fact: Fact,
  deadlineMs: number,
): Promise<FactTaken[]> {
  const taken = await Promise.allSettled(
    workflowIds.map((workflowId) =>
      client.withDeadline(deadlineMs, async (): Promise<FactTaken | undefined> => {
        const handle = client.workflow.getHandle<typeof expectationWorkflow>(workflowId);
        try {
          return await handle.executeUpdate(takeFactUpdate, { args: [fact] });
        } catch (error) {
          // Closed since the router sent the fact on (satisfied by it, most likely), before or while the update was
          // on its way (Temporal then answers not found, or aborts the update): its result is the record.
          const described = await handle.describe();
          if (described.status.name === 'COMPLETED') return factTakenOf(await handle.result());
          if (error instanceof WorkflowNotFoundError) return undefined;
          throw error;
        }
      }),
    ),
  );
  return taken.flatMap((outcome) => (outcome.status === 'fulfilled' && outcome.value ? [outcome.value] : []));
}

/** True when Temporal aborted an update because its workflow closed (continued as new) before it completed. */
function isAbortedUpdate(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (/update was aborted/i.test(e.message)) return true;
  }
  return false;
}

/**
 * A router that continues as new while an update waits aborts the update. recordFact is idempotent (the router
 * dedupes by observation), so it is sent again, to the new run, up to five times in all.
 */
async function resentIfAborted<T>(send: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await send();
    } catch (error) {
      if (attempt >= 5 || !isAbortedUpdate(error)) throw error;
    }
  }
}

/** recordFactRouted, answering only whether the fact was new. */
export async function recordFact(
  client: Client,
  taskQueue: string,
  fact: Fact,
  settings: { factRetention: string },
): Promise<'recorded' | 'duplicate'> {
  return (await recordFactRouted(client, taskQueue, fact, settings)).result;
}

/** Withdraws an open (or lapsed) expectation; a satisfied, withdrawn or closed one is 'not-open'. */
export async function withdrawExpectation(
  client: Client,
  expectationId: string,
  request: WithdrawRequest,
): Promise<'withdrawn' | 'not-open' | 'unknown'> {
  const handle = client.workflow.getHandle<typeof expectationWorkflow>(expectationWorkflowId(expectationId));
  let status: string;
  try {
    status = (await handle.describe()).status.name;
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return 'unknown';
    throw error;
  }
  if (status !== 'RUNNING') return 'not-open';
  try {
    // An update, not query-then-signal: the workflow itself decides, so a fact landing meanwhile cannot be overruled.
    return await handle.executeUpdate(withdrawUpdate, { args: [request] });
  } catch (error) {
    // Closed between describe and update.
    if (error instanceof WorkflowNotFoundError || error instanceof WorkflowUpdateFailedError) return 'not-open';
    throw error;
  }
}
