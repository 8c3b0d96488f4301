/**
 * Registering raised expectations with their fact routers and subject ledgers, from the bridge, before it answers `raised`
 * (docs/raise-path.md): one call per ledger, naming every expectation of the request that it serves: a
 * signal-with-start to a fact router, a start (or a signal, when it runs) to a subject ledger. Either way the
 * subscription is in the ledger's history when the call returns, ahead of any fact recorded afterwards, so no fact
 * received after the answer can miss them.
 */
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { Subject } from '../../core/types.js';
import { shardOf } from '../../core/fact-shards.js';
import type { factRouterWorkflow } from '../../workflows/fact-router.js';
import type { subjectLedgerWorkflow } from '../../workflows/subject-ledger.js';
import { subscribeSignal, type Subscribe as SubscribeArgs } from '../../workflows/messages.js';
import { settled } from './settled.js';

export interface Registration {
  /** Workflow id of the expectation that subscribes. */
  subscriber: string;
  factRouter: string;
  subjectLedger: string;
  factKey: string;
  subject: Subject;
  /**
   * The subject ledger drops it when a fact with its key comes (the fact satisfies it), so it need not unsubscribe;
   * only for an expectation without a horizon (workflows/subject-ledger.ts says why).
   */
  leavesSubjectOnFact: boolean;
  /** The fact router's retention, should this call start it. */
  retention: string;
}

/**
 * Subscribes every expectation to both of its ledgers, all ledgers at once and one call per ledger: a ledger that
 * several of them share (the steps of one subject, raised in one request) gets them all in one signal. Idempotent (a
 * ledger keeps a set of subscribers), so a request sent again completes an interrupted one.
 */
export async function registerAllWithLedgers(
  client: Client,
  taskQueue: string,
  registrations: readonly Registration[],
): Promise<void> {
  const factRouters = groupBy(registrations, (r) => r.factRouter);
  const subjectLedgers = groupBy(registrations, (r) => r.subjectLedger);
  const toRouter = (workflowId: string, args: Parameters<typeof factRouterWorkflow>, subscription: SubscribeArgs) =>
    client.workflow.signalWithStart<typeof factRouterWorkflow, [SubscribeArgs]>('factRouterWorkflow', {
      workflowId,
      taskQueue,
      args,
      signal: subscribeSignal,
      signalArgs: [subscription],
      staticSummary: `fact router ${args[0].shard}`,
    });
  // A subject ledger is started with its first subscription in its input (one event and one action fewer than a
  // signal-with-start); one that runs already is signalled, and one that closed in between is started again.
  const toSubjectLedger = async (workflowId: string, subject: Subject, subscription: SubscribeArgs) => {
    for (let attempt = 1; ; attempt++) {
      try {
        await client.workflow.start<typeof subjectLedgerWorkflow>('subjectLedgerWorkflow', {
          workflowId,
          taskQueue,
          args: [{ subject, subscribe: subscription }],
          staticSummary: `subject ledger of ${subject.type}/${subject.id}`,
        });
        return;
      } catch (error) {
        if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
      }
      try {
        await client.workflow.getHandle(workflowId).signal(subscribeSignal, subscription);
        return;
      } catch (error) {
        if (!(error instanceof WorkflowNotFoundError) || attempt >= 3) throw error;
      }
    }
  };
  await settled([
    ...[...factRouters].map(([workflowId, group]) => {
      const { factKey, retention } = group[0]!;
      const shard = shardOf(factKey);
      const subscription = { workflowIds: group.map((r) => r.subscriber), factKeys: group.map((r) => r.factKey) };
      return toRouter(workflowId, [{ shard, retention }], subscription);
    }),
    ...[...subjectLedgers].map(([workflowId, group]) => {
      const { subject, retention } = group[0]!;
      const factKeys = group.map((r) => (r.leavesSubjectOnFact ? r.factKey : null));
      const subscription = {
        workflowIds: group.map((r) => r.subscriber),
        ...(factKeys.some((k) => k !== null) ? { factKeys, retention } : {}),
      };
      return toSubjectLedger(workflowId, subject, subscription);
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
