/**
 * One workflow per subject (`subject:<type>:<id>`, DESIGN 3.2): forwards every fact on the subject to the
 * expectations on it, for stalls and `lastFactAt`. Started by expectations only; a fact never starts it.
 */
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import {
  subjectFactSignal,
  subjectObservedSignal,
  subscribeSignal,
  unsubscribeSignal,
  type SubjectLedgerInput,
} from './messages.js';

/** Runs while an expectation on the subject is open; continues as new when Temporal suggests it. */
export async function subjectLedgerWorkflow(input: SubjectLedgerInput): Promise<void> {
  const subscribers = new Set(input.carried?.subscribers ?? []);
  let lastFactAt = input.carried?.lastFactAt;
  let changes = 0;

  setHandler(subscribeSignal, ({ workflowId }) => {
    subscribers.add(workflowId);
    changes++;
  });

  setHandler(unsubscribeSignal, ({ workflowId }) => {
    subscribers.delete(workflowId);
    changes++;
  });

  setHandler(subjectObservedSignal, async (fact) => {
    if (lastFactAt === undefined || Date.parse(fact.observedAt) > Date.parse(lastFactAt)) lastFactAt = fact.observedAt;
    await Promise.all(
      [...subscribers].map(async (workflowId) => {
        try {
          await getExternalWorkflowHandle(workflowId).signal(subjectFactSignal, fact);
        } catch {
          // A closed expectation waits for nothing: drop it.
          subscribers.delete(workflowId);
          changes++;
        }
      }),
    );
  });

  const mayClose = () => subscribers.size === 0 && allHandlersFinished();
  const mayContinueAsNew = () => workflowInfo().continueAsNewSuggested && allHandlersFinished();

  for (;;) {
    if (mayClose()) return;
    if (mayContinueAsNew()) {
      await continueAsNew<typeof subjectLedgerWorkflow>({ ...input, carried: { subscribers: [...subscribers], lastFactAt } });
    }
    const before = changes;
    await condition(() => changes !== before || mayClose() || mayContinueAsNew());
  }
}
