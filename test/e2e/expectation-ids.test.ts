/**
 * What "never reused" holds on (docs/api.md, expectation ids): Temporal's record of the expectation's workflow.
 * While Temporal keeps the closed workflow, its id is refused with other content; once the workflow is deleted
 * (what the namespace retention does to a closed workflow, done here at once with DeleteWorkflowExecution), nothing
 * remembers the id and it is raised afresh.
 */
import { describe, expect, it, vi } from 'vitest';
import { expectationWorkflowId } from '../../core/ids.js';
import { expectation } from '../support/fixtures.js';
import { artifactUpdate, problem, request, unique, useBridgeEnv } from '../support/bridge.js';

const env = useBridgeEnv(['agent-a'], [], 'ids');

const raise = (e: ReturnType<typeof expectation>) =>
  request(`${env.url}/a2a/events`, { token: env.tokens['agent-a'], body: artifactUpdate({ expectations: [e] }) });
const read = (id: string) => request(`${env.url}/v1/expectations/${id}`, { token: env.tokens['agent-a'] });

describe('an expectation id', () => {
  it('is refused with other content while Temporal keeps the closed workflow, and raised afresh once it is deleted', async () => {
    const id = `ids-${unique()}`;
    const first = expectation(id, { expects: 'The first promise' });
    const second = expectation(id, { expects: 'Another promise under the same id' });
    expect((await raise(first)).body.expectations).toEqual([{ expectationId: id, result: 'raised' }]);
    const withdrawn = await request(`${env.url}/v1/expectations/${id}/withdraw`, {
      token: env.tokens['agent-a'],
      body: { reason: 'closing it' },
    });
    expect(withdrawn.body.result).toBe('withdrawn');
    const handle = env.client.workflow.getHandle(expectationWorkflowId(id));
    await handle.result();

    const whileKept = await raise(second);
    await env.client.workflowService.deleteWorkflowExecution({
      namespace: 'default',
      workflowExecution: { workflowId: expectationWorkflowId(id) },
    });
    // The server deletes in the background (some 20 s on the dev server).
    await vi.waitFor(async () => expect((await read(id)).status).toBe(404), { timeout: 90_000, interval: 500 });
    const afterDeletion = await raise(second);

    expect(whileKept.status).toBe(409);
    expect(whileKept.body.type).toBe(problem('conflict'));
    expect(afterDeletion.status).toBe(200);
    expect(afterDeletion.body.expectations).toEqual([{ expectationId: id, result: 'raised' }]);
    const record = await read(id);
    expect(record.body).toMatchObject({ state: 'open', expectation: { expects: 'Another promise under the same id' } });
  }, 150_000);
});
