/**
 * The watcher agent's task store: its tasks are receipts (completed, rejected or failed the moment they are
 * created), so only the most recent ones are kept, per caller, in memory. What was recorded lives in Temporal; a
 * receipt lost to a restart or to eviction loses nothing (GetTask then answers "task not found").
 *
 * Bounded by count and by bytes: a receipt holds the message it answers (up to the 1 MiB body, refused ones too), so
 * a thousand of them could hold a gigabyte. The bytes are those of the task as JSON, as GetTask would send it.
 *
 * ListTasks pages are cut by position in time, not by offset: a page token names the last receipt of the page it
 * follows (by its save sequence) and is signed with a key of this store, so a token the store did not hand out (or
 * handed out before a restart) is refused, never read as the first page.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { type ListTasksRequest, type ListTasksResponse, type Task } from '@a2a-js/sdk';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import type { ServerCallContext, TaskStore } from '@a2a-js/sdk/server';

const DEFAULT_PAGE_SIZE = 50;
const MAX_PAGE_SIZE = 100;

/** How many receipts are kept unless the endpoint says otherwise. */
export const DEFAULT_RECEIPTS = 1_000;
/** How many bytes of receipts are kept unless the endpoint says otherwise: 32 MiB. */
export const DEFAULT_RECEIPT_BYTES = 32 * 1024 * 1024;

/** The size of a task as JSON (UTF-8), bytes of file parts as base64: what the store counts against its bound. */
export function receiptBytes(task: Task): number {
  const json = JSON.stringify(task, (_key, value: unknown) =>
    value instanceof Uint8Array ? Buffer.from(value).toString('base64') : value,
  );
  return Buffer.byteLength(json, 'utf8');
}

/**
 * A TaskStore holding at most `capacity` tasks and `maxBytes` bytes of them; the least recently saved is dropped
 * first, and a task larger than `maxBytes` on its own is not kept (GetTask answers "task not found").
 */
export class RecentTaskStore implements TaskStore {
  private readonly tasks = new Map<string, { owner: string; task: Task; bytes: number; seq: number }>();
  private bytes = 0;
  private seq = 0;
  private readonly tokenKey = randomBytes(32);

  constructor(
    private readonly capacity = DEFAULT_RECEIPTS,
    private readonly maxBytes = DEFAULT_RECEIPT_BYTES,
  ) {}

  /** How many bytes the kept tasks take. */
  get size(): { tasks: number; bytes: number } {
    return { tasks: this.tasks.size, bytes: this.bytes };
  }

  async save(task: Task, context: ServerCallContext): Promise<void> {
    const owner = ownerOf(context);
    const key = keyOf(owner, task.id);
    this.remove(key); // re-inserted last: most recent
    const bytes = receiptBytes(task);
    if (bytes > this.maxBytes) return;
    this.tasks.set(key, { owner, task: structuredClone(task), bytes, seq: ++this.seq });
    this.bytes += bytes;
    while (this.tasks.size > this.capacity || this.bytes > this.maxBytes) {
      this.remove(this.tasks.keys().next().value as string);
    }
  }

  private remove(key: string): void {
    const entry = this.tasks.get(key);
    if (!entry) return;
    this.tasks.delete(key);
    this.bytes -= entry.bytes;
  }

  async load(taskId: string, context: ServerCallContext): Promise<Task | undefined> {
    const entry = this.tasks.get(keyOf(ownerOf(context), taskId));
    return entry ? structuredClone(entry.task) : undefined;
  }

  async list(params: ListTasksRequest, context: ServerCallContext): Promise<ListTasksResponse> {
    const owner = ownerOf(context);
    const before = params.pageToken ? this.readToken(owner, params.pageToken) : Number.POSITIVE_INFINITY;
    const after = params.statusTimestampAfter ? Date.parse(params.statusTimestampAfter) : undefined;
    const matching = [...this.tasks.values()]
      .filter((entry) => entry.owner === owner)
      .filter(({ task }) => !params.contextId || task.contextId === params.contextId)
      .filter(({ task }) => !params.status || task.status?.state === params.status)
      .filter(({ task }) => after === undefined || Date.parse(task.status?.timestamp ?? '') >= after)
      .reverse();
    const pageSize = Math.min(Math.max(params.pageSize ?? DEFAULT_PAGE_SIZE, 1), MAX_PAGE_SIZE);
    const rest = matching.filter((entry) => entry.seq < before);
    const page = rest.slice(0, pageSize);
    const tasks = page.map(({ task }) => {
      const copy = structuredClone(task);
      if (!params.includeArtifacts) copy.artifacts = [];
      if (params.historyLength !== undefined)
        copy.history = params.historyLength > 0 ? copy.history.slice(-params.historyLength) : [];
      return copy;
    });
    const nextPageToken = rest.length > pageSize ? this.token(owner, page[page.length - 1]!.seq) : '';
    return { tasks, nextPageToken, pageSize, totalSize: matching.length };
  }

  /** A page token: the sequence number of the page's last receipt, signed for its owner. */
  private token(owner: string, seq: number): string {
    return `${seq}.${this.signature(owner, seq).toString('base64url')}`;
  }

  private signature(owner: string, seq: number): Buffer {
    return createHmac('sha256', this.tokenKey).update(`${owner}\u0000${seq}`).digest().subarray(0, 16);
  }

  /** The sequence number a page token names, or a RequestMalformedError when the store did not hand it to `owner`. */
  private readToken(owner: string, token: string): number {
    const match = /^(\d{1,15})\.([A-Za-z0-9_-]{22})$/.exec(token);
    const seq = match ? Number(match[1]) : NaN;
    const given = match ? Buffer.from(match[2]!, 'base64url') : Buffer.alloc(0);
    if (!match || given.length !== 16 || !timingSafeEqual(given, this.signature(owner, seq))) {
      throw new RequestMalformedError({
        message:
          'Invalid params: params.pageToken is unknown: pass the nextPageToken of an earlier ListTasks answer (tokens do not ' +
          'survive a restart of the watcher), or none for the first page',
        metadata: { field: 'params.pageToken' },
      });
    }
    return seq;
  }
}

const ownerOf = (context: ServerCallContext): string => (context.user?.isAuthenticated ? context.user.userName : '');
const keyOf = (owner: string, taskId: string): string => `${owner}\u0000${taskId}`;
