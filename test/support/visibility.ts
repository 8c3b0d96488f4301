/**
 * A Temporal client that answers ListWorkflowExecutions, and nothing else, from records a test gives, as the
 * visibility store would list their expectation workflows (search attributes, and the memo holding the record): for
 * unit tests of the bridge's readers without a server. It keeps the queries it was asked, and can hold its answers
 * until the test lets them go.
 */
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import type { ExpectationRecord } from '../../core/schemas/record.js';
import { expectationWorkflowId, keywordValue, subjectKey } from '../../core/ids.js';
import {
  ExpectationAgent,
  ExpectationFactKey,
  ExpectationKind,
  ExpectationState,
  ExpectationSubject,
} from '../../src/temporal/search-attributes.js';

export interface FakeVisibility {
  client: Client;
  /** The visibility queries asked, in order. */
  queries: string[];
  /** How many calls wait for `release`. */
  readonly held: number;
  /** Answers the held calls, and every later one at once. */
  release(): void;
}

const payload = (value: unknown) => defaultPayloadConverter.toPayload(value)!;

/** One expectation workflow as ListWorkflowExecutions lists it. */
export function executionOf(record: ExpectationRecord): temporal.api.workflow.v1.IWorkflowExecutionInfo {
  const e = record.expectation;
  return {
    execution: { workflowId: expectationWorkflowId(e.expectationId), runId: 'run' },
    startTime: { seconds: Math.floor(Date.parse(record.raisedAt) / 1000) as never, nanos: 0 },
    searchAttributes: {
      indexedFields: {
        [ExpectationAgent.name]: payload(record.agent.id),
        [ExpectationKind.name]: payload(e.kind),
        [ExpectationState.name]: payload(record.state),
        [ExpectationSubject.name]: payload(subjectKey(e.subject)),
        [ExpectationFactKey.name]: payload(keywordValue(e.satisfiedBy.factKey)),
      },
    },
    memo: { fields: { record: payload(record), expectationId: payload(e.expectationId) } },
  };
}

/**
 * A client whose visibility store answers every query with the executions of `answer(query)`, on one page; held
 * until `release()` when `hold` is set.
 */
export function fakeVisibility(
  answer: (query: string) => ExpectationRecord[],
  options: { hold?: boolean } = {},
): FakeVisibility {
  const queries: string[] = [];
  let held = 0;
  let open!: () => void;
  const gate = options.hold ? new Promise<void>((resolve) => (open = resolve)) : Promise.resolve();
  const client = {
    options: { loadedDataConverter: { payloadConverter: defaultPayloadConverter, payloadCodecs: [] } },
    workflowService: {
      async listWorkflowExecutions({ query }: { query: string }) {
        queries.push(query);
        held++;
        await gate;
        held--;
        return { executions: answer(query).map(executionOf), nextPageToken: new Uint8Array() };
      },
    },
  } as unknown as Client;
  return {
    client,
    queries,
    get held() {
      return held;
    },
    release: () => open?.(),
  };
}
