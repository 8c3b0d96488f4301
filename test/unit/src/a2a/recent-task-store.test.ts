/**
 * The watcher agent's receipts store: bounded by count and by bytes, per caller and in all, most recent kept, each
 * caller sees only its own tasks, and its page tokens tell nothing.
 */
import { TaskState, type Task } from '@a2a-js/sdk';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import { ServerCallContext, type User } from '@a2a-js/sdk/server';
import { describe, expect, it } from 'vitest';
import { receiptBytes, RecentTaskStore } from '../../../../src/a2a/recent-task-store.js';

const as = (userName: string) => new ServerCallContext({ user: { isAuthenticated: true, userName } satisfies User });
const task = (id: string, contextId = 'ctx'): Task => ({
  id,
  contextId,
  status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: new Date().toISOString() },
  artifacts: [],
  history: [],
  metadata: undefined,
});

/** A ListTasks request of every state and context, first page, with `fields` instead. */
const listQuery = (fields: { contextId?: string; pageSize?: number; pageToken?: string } = {}) => ({
  tenant: '',
  contextId: '',
  status: TaskState.TASK_STATE_UNSPECIFIED,
  statusTimestampAfter: undefined,
  pageToken: '',
  ...fields,
});

describe('RecentTaskStore', () => {
  it('drops the least recently saved task beyond its capacity', async () => {
    const store = new RecentTaskStore(2);
    for (const id of ['t1', 't2', 't3']) await store.save(task(id), as('a'));

    expect(await store.load('t1', as('a'))).toBeUndefined();
    expect((await store.load('t3', as('a')))?.id).toBe('t3');
  });

  /** A task whose history holds one message of `n` characters, as a receipt holds the message it answers. */
  const holding = (id: string, n: number): Task => ({
    ...task(id),
    history: [
      {
        messageId: `m-${id}`,
        contextId: 'ctx',
        taskId: id,
        role: 1,
        parts: [{ content: { $case: 'text', value: 'x'.repeat(n) }, metadata: undefined, filename: '', mediaType: '' }],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      },
    ],
  });

  it('keeps tasks up to exactly its bound in bytes, and drops the oldest when one more would pass it', async () => {
    const [t1, t2, t3] = ['t1', 't2', 't3'].map((id) => holding(id, 100_000));
    const store = new RecentTaskStore(1_000, receiptBytes(t1!) + receiptBytes(t2!));
    await store.save(t1!, as('a'));
    await store.save(t2!, as('a'));
    const atTheBound = store.size;

    await store.save(t3!, as('a'));

    expect(atTheBound).toEqual({ tasks: 2, bytes: receiptBytes(t1!) + receiptBytes(t2!) });
    expect(await store.load('t1', as('a'))).toBeUndefined();
    expect((await store.load('t2', as('a')))?.id).toBe('t2');
    expect((await store.load('t3', as('a')))?.id).toBe('t3');
    expect(store.size.bytes).toBeLessThanOrEqual(receiptBytes(t1!) + receiptBytes(t2!));
  });

  it('keeps a task exactly as large as its bound, and not one a byte larger', async () => {
    const exactly = holding('t1', 1_000);
    const larger = holding('t2', 1_001);
    const store = new RecentTaskStore(1_000, receiptBytes(exactly));

    await store.save(exactly, as('a'));
    await store.save(larger, as('a'));

    expect(receiptBytes(larger)).toBe(receiptBytes(exactly) + 1);
    expect((await store.load('t1', as('a')))?.id).toBe('t1');
    expect(await store.load('t2', as('a'))).toBeUndefined();
  });

  it('counts a task saved again once, at its new size', async () => {
    const store = new RecentTaskStore();
    await store.save(holding('t1', 10_000), as('a'));

    await store.save(holding('t1', 10), as('a'));

    expect(store.size).toEqual({ tasks: 1, bytes: receiptBytes(holding('t1', 10)) });
  });

  it("keeps another caller's receipts when one caller sends large messages past its own budget", async () => {
    const size = receiptBytes(holding('a00', 100_000));
    const store = new RecentTaskStore(1_000, 10 * size, { tasks: 1_000, bytes: 3 * size });
    await store.save(holding('b00', 100_000), as('b'));

    for (let k = 10; k < 30; k++) await store.save(holding(`a${k}`, 100_000), as('a'));

    expect((await store.load('b00', as('b')))?.id).toBe('b00');
    expect(store.sizeOf('a')).toEqual({ tasks: 3, bytes: 3 * size });
    expect(await store.load('a26', as('a'))).toBeUndefined();
    expect((await store.load('a29', as('a')))?.id).toBe('a29');
  });

  it("keeps at most its count of one caller, dropping that caller's oldest", async () => {
    const store = new RecentTaskStore(1_000, 1_000_000, { tasks: 2, bytes: 1_000_000 });
    await store.save(task('b1'), as('b'));

    for (const id of ['a1', 'a2', 'a3']) await store.save(task(id), as('a'));

    expect(await store.load('a1', as('a'))).toBeUndefined();
    expect(store.sizeOf('a').tasks).toBe(2);
    expect((await store.load('b1', as('b')))?.id).toBe('b1');
  });

  it('past its bound in all, drops the oldest receipt of the caller holding the most', async () => {
    const size = receiptBytes(holding('a0', 10_000));
    const store = new RecentTaskStore(1_000, 4 * size, { tasks: 1_000, bytes: 3 * size });
    for (const id of ['a1', 'a2', 'a3']) await store.save(holding(id, 10_000), as('a'));

    for (const id of ['b1', 'b2']) await store.save(holding(id, 10_000), as('b'));

    expect(store.size).toEqual({ tasks: 4, bytes: 4 * size });
    expect(store.sizeOf('b').tasks).toBe(2);
    expect(await store.load('a1', as('a'))).toBeUndefined();
    expect((await store.load('a2', as('a')))?.id).toBe('a2');
  });

  it("does not keep a task larger than one caller's budget, though the store has room for it", async () => {
    const store = new RecentTaskStore(1_000, 1_000_000, { tasks: 1_000, bytes: 10_000 });

    await store.save(holding('t1', 20_000), as('a'));

    expect(await store.load('t1', as('a'))).toBeUndefined();
    expect(store.size).toEqual({ tasks: 0, bytes: 0 });
  });

  it('hands out page tokens that tell nothing: no sequence, sealed anew each time, the same length however many receipts', async () => {
    const store = new RecentTaskStore();
    for (let k = 0; k < 30; k++) await store.save(task(`b${k}`), as('b'));
    for (const id of ['a1', 'a2', 'a3']) await store.save(task(id), as('a'));
    const query = listQuery({ pageSize: 1 });

    const first = await store.list(query, as('a'));
    const again = await store.list(query, as('a'));
    const fresh = new RecentTaskStore();
    for (const id of ['a1', 'a2', 'a3']) await fresh.save(task(id), as('a'));
    const elsewhere = await fresh.list(query, as('a'));

    expect(first.nextPageToken).not.toMatch(/^\d+\./);
    expect(again.nextPageToken).not.toBe(first.nextPageToken);
    expect(first.nextPageToken).toHaveLength(elsewhere.nextPageToken.length);
    for (const token of [first.nextPageToken, again.nextPageToken]) {
      expect((await store.list({ ...query, pageToken: token }, as('a'))).tasks.map((t) => t.id)).toEqual(['a2']);
    }
  });

  it('shows a caller only its own tasks', async () => {
    const store = new RecentTaskStore();
    await store.save(task('t1'), as('a'));

    expect(await store.load('t1', as('b'))).toBeUndefined();
    expect((await store.list(listQuery(), as('b'))).tasks).toEqual([]);
  });

  it('lists newest first, filtered by context, a page at a time', async () => {
    const store = new RecentTaskStore();
    for (const id of ['t1', 't2', 't3']) await store.save(task(id, 'c1'), as('a'));
    await store.save(task('other', 'c2'), as('a'));
    const query = listQuery({ contextId: 'c1', pageSize: 2 });

    const first = await store.list({ ...query, pageToken: '' }, as('a'));
    const second = await store.list({ ...query, pageToken: first.nextPageToken }, as('a'));

    expect(first.tasks.map((t) => t.id)).toEqual(['t3', 't2']);
    expect(second.tasks.map((t) => t.id)).toEqual(['t1']);
    expect(second.nextPageToken).toBe('');
    expect(first.totalSize).toBe(3);
  });

  it('keeps its pages when receipts arrive between them (a token names a receipt, not an offset)', async () => {
    const store = new RecentTaskStore();
    for (const id of ['t1', 't2', 't3']) await store.save(task(id), as('a'));
    const query = listQuery({ pageSize: 2 });

    const first = await store.list({ ...query, pageToken: '' }, as('a'));
    await store.save(task('t4'), as('a'));
    const second = await store.list({ ...query, pageToken: first.nextPageToken }, as('a'));

    expect(second.tasks.map((t) => t.id)).toEqual(['t1']);
  });

  it.each([
    ['an offset', '2'],
    ['garbage', 'abc'],
    ['a forged signature', '1.AAAAAAAAAAAAAAAAAAAAAA'],
  ])('refuses %s as a page token, never reading it as the first page', async (_name, pageToken) => {
    const store = new RecentTaskStore();
    for (const id of ['t1', 't2', 't3']) await store.save(task(id), as('a'));

    const listing = store.list(listQuery({ pageToken }), as('a'));

    await expect(listing).rejects.toBeInstanceOf(RequestMalformedError);
    await expect(listing).rejects.toMatchObject({
      message: expect.stringContaining('params.pageToken is unknown'),
      metadata: { field: 'params.pageToken' },
    });
  });

  it('refuses a page token handed to another caller, or by another store (a restart)', async () => {
    const store = new RecentTaskStore();
    for (const id of ['t1', 't2']) await store.save(task(id), as('a'));
    const query = listQuery({ pageSize: 1 });
    const { nextPageToken } = await store.list({ ...query, pageToken: '' }, as('a'));

    await expect(store.list({ ...query, pageToken: nextPageToken }, as('b'))).rejects.toBeInstanceOf(
      RequestMalformedError,
    );
    await expect(new RecentTaskStore().list({ ...query, pageToken: nextPageToken }, as('a'))).rejects.toBeInstanceOf(
      RequestMalformedError,
    );
  });
});
