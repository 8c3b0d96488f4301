/**
 * The watcher agent's receipts store: bounded, most recent kept, each caller sees only its own tasks.
 */
import { TaskState, type Task } from '@a2a-js/sdk';
import { ServerCallContext, type User } from '@a2a-js/sdk/server';
import { describe, expect, it } from 'vitest';
import { RecentTaskStore } from '../../src/a2a/recent-task-store.js';

const as = (userName: string) => new ServerCallContext({ user: { isAuthenticated: true, userName } satisfies User });
const task = (id: string, contextId = 'ctx'): Task => ({
  id,
  contextId,
  status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: new Date().toISOString() },
  artifacts: [],
  history: [],
  metadata: undefined,
});

describe('RecentTaskStore', () => {
  it('drops the least recently saved task beyond its capacity', async () => {
    const store = new RecentTaskStore(2);
    for (const id of ['t1', 't2', 't3']) await store.save(task(id), as('a'));

    expect(await store.load('t1', as('a'))).toBeUndefined();
    expect((await store.load('t3', as('a')))?.id).toBe('t3');
  });

  it('shows a caller only its own tasks', async () => {
    const store = new RecentTaskStore();
    await store.save(task('t1'), as('a'));

    expect(await store.load('t1', as('b'))).toBeUndefined();
    expect((await store.list({ tenant: '', contextId: '', status: TaskState.TASK_STATE_UNSPECIFIED, pageToken: '', statusTimestampAfter: undefined }, as('b'))).tasks).toEqual([]);
  });

  it('lists newest first, filtered by context, a page at a time', async () => {
    const store = new RecentTaskStore();
    for (const id of ['t1', 't2', 't3']) await store.save(task(id, 'c1'), as('a'));
    await store.save(task('other', 'c2'), as('a'));
    const query = { tenant: '', contextId: 'c1', status: TaskState.TASK_STATE_UNSPECIFIED, statusTimestampAfter: undefined, pageSize: 2 };

    const first = await store.list({ ...query, pageToken: '' }, as('a'));
    const second = await store.list({ ...query, pageToken: first.nextPageToken }, as('a'));

    expect(first.tasks.map((t) => t.id)).toEqual(['t3', 't2']);
    expect(second.tasks.map((t) => t.id)).toEqual(['t1']);
    expect(second.nextPageToken).toBe('');
    expect(first.totalSize).toBe(3);
  });
});
