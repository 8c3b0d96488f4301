/**
 * Registering a raised expectation with its fact and subject ledgers, from the bridge, before it answers `raised`
 * (docs/raise-path.md). A ledger that is not running is started with the expectation already among its subscribers;
 * a running one gets a `subscribe` signal. Either way the subscription is in the ledger's history when the call
 * returns, ahead of any fact recorded afterwards, so no fact received after the answer can miss the expectation.
 */
import {
  QueryNotRegisteredError,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  type Client,
} from '@temporalio/client';
import type { Fact, Subject } from '../../core/types.js';
import type { factLedgerWorkflow } from '../../workflows/fact-ledger.js';
import type { subjectLedgerWorkflow } from '../../workflows/subject-ledger.js';
import {
  ledgerLoadQuery,
  retainedFactQuery,
  subscribeSignal,
  type FactLedgerInput,
  type SubjectLedgerInput,
} from '../../workflows/messages.js';
import { settled } from './settled.js';

/** How often a subscription is tried again when the ledger closed between our start and our signal. */
const SUBSCRIBE_TRIES = 3;

export interface Registration {
  /** Workflow id of the expectation that subscribes. */
  subscriber: string;
  factLedger: string;
  subjectLedger: string;
  factKey: string;
  subject: Subject;
  /** The fact ledger's retention, should this call start it. */
  retention: string;
}

/** Subscribes the expectation to both of its ledgers; idempotent (a ledger keeps a set of subscribers). */
export function registerWithLedgers(client: Client, taskQueue: string, registration: Registration): Promise<void> {
  return registerAllWithLedgers(client, taskQueue, [registration]);
}

/**
 * Subscribes every expectation to both of its ledgers, all ledgers at once and one call per ledger: a ledger that
 * several of them share (the steps of one subject, raised in one request) is started once with all of them in its
 * input, or signalled once for each when it runs. `running` names the ledgers seen running a moment ago (the
 * bridge's occupancy queries): those are signalled first instead of started, which saves the refused start.
 */
export async function registerAllWithLedgers(
  client: Client,
  taskQueue: string,
  registrations: readonly Registration[],
  running: ReadonlySet<string> = new Set(),
): Promise<void> {
  const factLedgers = groupBy(registrations, (r) => r.factLedger);
  const subjectLedgers = groupBy(registrations, (r) => r.subjectLedger);
  await settled([
    ...[...factLedgers].map(([workflowId, group]) => {
      const { factKey, retention } = group[0]!;
      const subscribers = group.map((r) => r.subscriber);
      const input: FactLedgerInput = { factKey, retention, subscribers };
      return subscribe<typeof factLedgerWorkflow>(client, 'factLedgerWorkflow', workflowId, subscribers, running.has(workflowId), {
        taskQueue,
        args: [input],
        staticSummary: `fact ledger of ${factKey}`,
      });
    }),
    ...[...subjectLedgers].map(([workflowId, group]) => {
      const { subject } = group[0]!;
      const subscribers = group.map((r) => r.subscriber);
      const input: SubjectLedgerInput = { subject, subscribers };
      return subscribe<typeof subjectLedgerWorkflow>(client, 'subjectLedgerWorkflow', workflowId, subscribers, running.has(workflowId), {
        taskQueue,
        args: [input],
        staticSummary: `subject ledger of ${subject.type}/${subject.id}`,
      });
    }),
  ]);
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const group = groups.get(k);
    if (group) group.push(item);
    else groups.set(k, [item]);
  }
  return groups;
}

/**
 * Starts the ledger with the subscribers in its input (one workflow task, no signal), or signals a running one once
 * per subscriber; one seen running is signalled first. A ledger that closes between the two is started again.
 */
async function subscribe<W extends typeof factLedgerWorkflow | typeof subjectLedgerWorkflow>(
  client: Client,
  workflowType: 'factLedgerWorkflow' | 'subjectLedgerWorkflow',
  workflowId: string,
  subscribers: readonly string[],
  seenRunning: boolean,
  start: { taskQueue: string; args: Parameters<W>; staticSummary: string },
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    if (attempt > 1 || !seenRunning) {
      try {
        await client.workflow.start<W>(workflowType, { workflowId, ...start, workflowIdConflictPolicy: 'FAIL' });
        return;
      } catch (error) {
        if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
      }
    }
    try {
      const handle = client.workflow.getHandle(workflowId);
      await settled(subscribers.map((subscriber) => handle.signal(subscribeSignal, { workflowId: subscriber })));
      return;
    } catch (error) {
      if (!(error instanceof WorkflowNotFoundError) || attempt >= SUBSCRIBE_TRIES) throw error;
    }
  }
}

/**
 * The fact a running fact ledger retains (an early fact), read before an expectation whose deadline has already
 * passed is started, so that it is satisfied by it instead of lapsing in its first workflow task.
 */
export async function retainedFact(client: Client, factLedgerWorkflowId: string): Promise<Fact | undefined> {
  try {
    return await client.workflow.getHandle(factLedgerWorkflowId).query(retainedFactQuery);
  } catch (error) {
    // No ledger (never started, or closed with nothing retained) is the common case: nothing early to apply.
    if (error instanceof WorkflowNotFoundError) return undefined;
    throw error;
  }
}

/**
 * How many expectations a ledger (fact or subject) forwards to now, and whether it runs: 0 and not running when it
 * does not; 0 and running when its worker predates the query (it then keeps its bound itself).
 */
export async function ledgerLoad(client: Client, ledgerWorkflowId: string): Promise<{ subscribers: number; running: boolean }> {
  try {
    const { subscribers } = await client.workflow.getHandle(ledgerWorkflowId).query(ledgerLoadQuery);
    return { subscribers, running: true };
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return { subscribers: 0, running: false };
    if (error instanceof QueryNotRegisteredError) return { subscribers: 0, running: true };
    throw error;
  }
}
