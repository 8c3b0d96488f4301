import { describe, expect, it } from 'vitest';
import { parseA2AEvent } from '../../../../src/schemas/a2a.js';
import { joinPath } from '../../../../src/service/errors.js';

const stateOf = (body: unknown) => {
  const parsed = parseA2AEvent(body);
  if (!parsed.success || parsed.data.version !== '1.0' || !('statusUpdate' in parsed.data.event)) return undefined;
  return parsed.data.event.statusUpdate.status?.state;
};

/** The A2A version the body is read as, or undefined when it is refused. */
const versionOf = (body: unknown) => {
  const parsed = parseA2AEvent(body);
  return parsed.success ? parsed.data.version : undefined;
};

const paths = (body: unknown) => {
  const parsed = parseA2AEvent(body);
  if (parsed.success) throw new Error('expected a failure');
  return parsed.issues.map((issue) => ({ path: joinPath(issue.path), message: issue.message }));
};

describe('parseA2AEvent: v1.0 ProtoJSON', () => {
  it('reads a task with enum names and keeps fields it does not read', () => {
    const body = {
      task: {
        id: 't1',
        contextId: 'c1',
        status: { state: 'TASK_STATE_INPUT_REQUIRED', timestamp: '2026-01-01T00:00:00Z' },
        artifacts: [{ artifactId: 'a1', parts: [{ text: 'hi' }], extensions: ['x'] }],
      },
    };

    const parsed = parseA2AEvent(body);

    expect(parsed.success && parsed.data).toEqual({ version: '1.0', event: body });
  });

  it('accepts the numeric form of a task state and reads it as its enum name', () => {
    const state = stateOf({ statusUpdate: { taskId: 't1', contextId: 'c1', status: { state: 6 } } });

    expect(state).toBe('TASK_STATE_INPUT_REQUIRED');
  });

  it('reads a status without state (ProtoJSON omits the default) as UNSPECIFIED', () => {
    const state = stateOf({ statusUpdate: { taskId: 't1', contextId: 'c1', status: {} } });

    expect(state).toBe('TASK_STATE_UNSPECIFIED');
  });

  it('reads a plain message with neither task nor context', () => {
    expect(versionOf({ message: { messageId: 'm1', role: 'ROLE_AGENT', parts: [{ text: 'x' }] } })).toBe('1.0');
  });

  it('names the missing task id by its path', () => {
    expect(paths({ task: { contextId: 'c1' } })).toEqual([
      { path: 'task/id', message: 'Invalid input: expected string, received undefined' },
    ]);
  });

  it('names an unknown state by its path', () => {
    expect(
      paths({ statusUpdate: { taskId: 't', contextId: 'c', status: { state: 'TASK_STATE_NAPPING' } } })[0]?.path,
    ).toBe('statusUpdate/status/state');
  });

  it('names a metadata that is not an object by its path', () => {
    expect(
      paths({ artifactUpdate: { taskId: 't', contextId: 'c', artifact: { artifactId: 'a', metadata: 'x' } } })[0]?.path,
    ).toBe('artifactUpdate/artifact/metadata');
  });

  it('refuses an object that is neither a StreamResponse nor a v0.3 object', () => {
    expect(paths({ id: 't1' })).toEqual([
      {
        path: '',
        message:
          'must be a v1.0 StreamResponse ({task}, {message}, {statusUpdate} or {artifactUpdate}) or a v0.3 object with kind',
      },
    ]);
  });

  it('refuses a StreamResponse with two payloads', () => {
    expect(paths({ task: { id: 't', contextId: 'c' }, message: {} })).toEqual([
      {
        path: '',
        message: 'must carry exactly one of task, message, statusUpdate, artifactUpdate (found task, message)',
      },
    ]);
  });

  it('refuses a body that is not an object', () => {
    expect(paths([1, 2])).toEqual([{ path: '', message: 'must be a JSON object' }]);
  });
});

describe('parseA2AEvent: v0.3 kind forms', () => {
  it('reads a v0.3 task with lower-case states', () => {
    const task = {
      kind: 'task',
      id: 't1',
      contextId: 'c1',
      status: { state: 'input-required', message: { kind: 'message', messageId: 'm', role: 'agent', parts: [] } },
    };

    expect(versionOf(task)).toBe('0.3');
  });

  it('reads v0.3 status and artifact updates and messages', () => {
    const bodies = [
      { kind: 'status-update', taskId: 't', contextId: 'c', status: { state: 'working' }, final: false },
      {
        kind: 'artifact-update',
        taskId: 't',
        contextId: 'c',
        artifact: { artifactId: 'a', parts: [{ kind: 'text', text: 'x' }] },
      },
      { kind: 'message', messageId: 'm', role: 'agent', parts: [{ kind: 'text', text: 'x' }] },
    ];

    expect(bodies.map((body) => parseA2AEvent(body).success)).toEqual([true, true, true]);
  });

  it('names an unknown kind', () => {
    expect(paths({ kind: 'nap' })[0]?.path).toBe('kind');
  });

  it('names a v1.0 state in a v0.3 object by its path', () => {
    expect(
      paths({ kind: 'status-update', taskId: 't', contextId: 'c', status: { state: 'TASK_STATE_WORKING' } })[0]?.path,
    ).toBe('status/state');
  });
});
