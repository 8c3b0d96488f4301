import { describe, expect, it } from 'vitest';
import { parseA2AEvent } from '../../../../src/schemas/a2a.js';
import { EXTENSION_URI } from '../../../../core/schemas/extension.js';
import { joinPath } from '../../../../src/service/errors.js';
import { extractEvent } from '../../../../src/service/extract.js';

const U = joinPath([EXTENSION_URI]);
const ext = (payload: unknown) => ({ [EXTENSION_URI]: payload });
const fact = { factKey: 'k', observedAt: '2026-01-01T00:00:00Z' };
const exp = { expectationId: 'e1' };

function extract(body: unknown) {
  const parsed = parseA2AEvent(body);
  if (!parsed.success) throw new Error(JSON.stringify(parsed.issues));
  const out = extractEvent(parsed.data);
  return {
    ...out,
    expectations: out.expectations.map((i) => joinPath(i.path)),
    facts: out.facts.map((i) => joinPath(i.path)),
    withdraw: out.withdraw.map((i) => [joinPath(i.path), i.value]),
  };
}

describe('extractEvent: v1.0', () => {
  it('takes expectations, facts and withdraw lists from task artifacts, with the origin task', () => {
    const out = extract({
      task: {
        id: 't1',
        contextId: 'c1',
        status: { state: 'TASK_STATE_COMPLETED' },
        artifacts: [{ artifactId: 'a', metadata: ext({ expectations: [exp, exp], facts: [fact], withdraw: ['e0'] }) }],
      },
    });

    expect(out).toEqual({
      origin: { taskId: 't1', contextId: 'c1' },
      originPaths: { taskId: ['task', 'id'], contextId: ['task', 'contextId'] },
      expectations: [`task/artifacts/0/metadata/${U}/expectations/0`, `task/artifacts/0/metadata/${U}/expectations/1`],
      facts: [`task/artifacts/0/metadata/${U}/facts/0`],
      withdraw: [[`task/artifacts/0/metadata/${U}/withdraw/0`, 'e0']],
      schemaErrors: [],
      placementErrors: [],
      notApplied: [],
      activated: false,
    });
  });

  it('takes expectations from the status message of an input-required status update', () => {
    const out = extract({
      statusUpdate: {
        taskId: 't1',
        contextId: 'c1',
        status: {
          state: 'TASK_STATE_INPUT_REQUIRED',
          message: { messageId: 'm', metadata: ext({ expectations: [exp] }) },
        },
      },
    });

    expect([out.expectations, out.placementErrors]).toEqual([
      [`statusUpdate/status/message/metadata/${U}/expectations/0`],
      [],
    ]);
  });

  it('refuses expectations in the status message of a task that is not input-required', () => {
    const out = extract({
      task: {
        id: 't',
        contextId: 'c',
        status: { state: 'TASK_STATE_WORKING', message: { metadata: ext({ expectations: [exp], facts: [fact] }) } },
      },
    });

    expect([out.expectations, out.facts, out.placementErrors]).toEqual([
      [],
      [`task/status/message/metadata/${U}/facts/0`],
      [
        {
          path: `task/status/message/metadata/${U}/expectations`,
          rule: 'expectations-placement',
          message: 'expectations in a status message are raised only when the task state is input-required',
        },
      ],
    ]);
  });

  it('refuses expectations and withdraw lists in a plain message, keeping its facts', () => {
    const out = extract({
      message: { messageId: 'm', taskId: 't', metadata: ext({ expectations: [exp], withdraw: ['x'], facts: [fact] }) },
    });

    expect([out.origin, out.facts, out.placementErrors.map((e) => [e.path, e.rule])]).toEqual([
      { taskId: 't' },
      [`message/metadata/${U}/facts/0`],
      [
        [`message/metadata/${U}/expectations`, 'expectations-placement'],
        [`message/metadata/${U}/withdraw`, 'withdraw-placement'],
      ],
    ]);
  });

  it('takes facts from task history and answers the expectations of earlier status messages there as not raised', () => {
    const out = extract({
      task: { id: 't', contextId: 'c', history: [{ metadata: ext({ expectations: [exp], facts: [fact] }) }] },
    });

    expect([out.expectations, out.facts, out.placementErrors]).toEqual([
      [],
      [`task/history/0/metadata/${U}/facts/0`],
      [],
    ]);
    expect(out.notApplied).toEqual([
      {
        path: `task/history/0/metadata/${U}/expectations`,
        rule: 'history-not-raised',
        message: expect.stringContaining('not raised'),
      },
    ]);
  });

  it('takes the artifact of an artifact update', () => {
    const out = extract({
      artifactUpdate: {
        taskId: 't',
        contextId: 'c',
        artifact: { artifactId: 'a', metadata: ext({ expectations: [exp] }) },
      },
    });

    expect([out.origin, out.expectations]).toEqual([
      { taskId: 't', contextId: 'c' },
      [`artifactUpdate/artifact/metadata/${U}/expectations/0`],
    ]);
  });

  it('reports metadata[URI] of the wrong shape as a schema error with its path', () => {
    const out = extract({
      artifactUpdate: {
        taskId: 't',
        contextId: 'c',
        artifact: { metadata: ext({ expectations: 'e1', withdraw: [''] }) },
      },
    });

    expect(out.schemaErrors.map((e) => e.path)).toEqual([
      `artifactUpdate/artifact/metadata/${U}/expectations`,
      `artifactUpdate/artifact/metadata/${U}/withdraw/0`,
    ]);
  });

  it('finds nothing in an object without the extension', () => {
    const out = extract({
      task: { id: 't', contextId: 'c', artifacts: [{ artifactId: 'a', metadata: { other: 1 } }] },
    });

    expect([out.expectations, out.facts, out.withdraw]).toEqual([[], [], []]);
  });
});

describe('extractEvent: v0.3', () => {
  it('takes expectations from the artifacts and input-required status message of a v0.3 task', () => {
    const out = extract({
      kind: 'task',
      id: 't',
      contextId: 'c',
      status: { state: 'input-required', message: { kind: 'message', metadata: ext({ expectations: [exp] }) } },
      artifacts: [{ artifactId: 'a', metadata: ext({ expectations: [exp] }) }],
    });

    expect(out.expectations).toEqual([
      `artifacts/0/metadata/${U}/expectations/0`,
      `status/message/metadata/${U}/expectations/0`,
    ]);
  });

  it('says where the origin ids are, in each shape', () => {
    const paths = (body: unknown) => extract(body).originPaths;
    const status = { state: 'TASK_STATE_WORKING' };

    expect(paths({ statusUpdate: { taskId: 't', contextId: 'c', status } })).toEqual({
      taskId: ['statusUpdate', 'taskId'],
      contextId: ['statusUpdate', 'contextId'],
    });
    expect(paths({ message: { messageId: 'm', role: 'ROLE_USER', parts: [], taskId: 't' } })).toEqual({
      taskId: ['message', 'taskId'],
      contextId: ['message', 'contextId'],
    });
    expect(paths({ kind: 'task', id: 't', contextId: 'c', status: { state: 'working' } })).toEqual({
      taskId: ['id'],
      contextId: ['contextId'],
    });
    expect(
      paths({ kind: 'status-update', taskId: 't', contextId: 'c', status: { state: 'working' }, final: false }),
    ).toEqual({ taskId: ['taskId'], contextId: ['contextId'] });
  });

  it('takes the artifact of a v0.3 artifact-update', () => {
    const out = extract({
      kind: 'artifact-update',
      taskId: 't',
      contextId: 'c',
      artifact: { metadata: ext({ withdraw: ['e'] }) },
    });

    expect(out.withdraw).toEqual([[`artifact/metadata/${U}/withdraw/0`, 'e']]);
  });

  it('refuses expectations in a v0.3 message', () => {
    const out = extract({ kind: 'message', messageId: 'm', metadata: ext({ expectations: [exp] }) });

    expect(out.placementErrors.map((e) => e.path)).toEqual([`metadata/${U}/expectations`]);
  });
});

describe('extractEvent: activation by the extensions fields', () => {
  const other = 'https://example.com/other/v1';

  it.each([
    [
      'a v1.0 artifact update',
      { artifactUpdate: { taskId: 't', contextId: 'c', artifact: { extensions: [other, EXTENSION_URI] } } },
    ],
    [
      'a v1.0 task artifact',
      { task: { id: 't', contextId: 'c', artifacts: [{ artifactId: 'a' }, { extensions: [EXTENSION_URI] }] } },
    ],
    ['a v1.0 message', { message: { messageId: 'm', extensions: [EXTENSION_URI] } }],
    [
      'a v1.0 status message',
      {
        statusUpdate: {
          taskId: 't',
          contextId: 'c',
          status: { state: 'TASK_STATE_WORKING', message: { extensions: [EXTENSION_URI] } },
        },
      },
    ],
    [
      'a v1.0 task history message',
      { task: { id: 't', contextId: 'c', history: [{ messageId: 'm', extensions: [EXTENSION_URI] }] } },
    ],
    [
      'a v0.3 artifact-update',
      { kind: 'artifact-update', taskId: 't', contextId: 'c', artifact: { extensions: [EXTENSION_URI] } },
    ],
    ['a v0.3 message', { kind: 'message', messageId: 'm', extensions: [EXTENSION_URI] }],
  ])('reads the extension as activated when %s lists its URI', (_where, body) => {
    expect(extract(body).activated).toBe(true);
  });

  it.each([
    [
      'no extensions field',
      { artifactUpdate: { taskId: 't', contextId: 'c', artifact: { metadata: ext({ facts: [fact] }) } } },
    ],
    ['only other extensions', { message: { messageId: 'm', extensions: [other], metadata: ext({ facts: [fact] }) } }],
    ['an extensions field that is not a list of URIs', { kind: 'message', messageId: 'm', extensions: EXTENSION_URI }],
    [
      'the URI on the task, which has no extensions field in A2A',
      { task: { id: 't', contextId: 'c', extensions: [EXTENSION_URI] } },
    ],
  ])('reads it as not activated with %s, and reads the payload all the same', (_what, body) => {
    const out = extract(body);

    expect(out.activated).toBe(false);
    expect(out.schemaErrors).toEqual([]);
  });

  it('reads the payload of an unactivated object as of an activated one', () => {
    const artifact = { artifactId: 'a', metadata: ext({ expectations: [exp], facts: [fact] }) };
    const update = (extra: object) => ({
      artifactUpdate: { taskId: 't', contextId: 'c', artifact: { ...artifact, ...extra } },
    });

    const { activated: on, ...activated } = extract(update({ extensions: [EXTENSION_URI] }));
    const { activated: off, ...unactivated } = extract(update({}));

    expect([on, off]).toEqual([true, false]);
    expect(unactivated).toEqual(activated);
  });
});
