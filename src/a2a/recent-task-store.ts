/**
 * The watcher agent's task store: its tasks are receipts (completed, rejected or failed the moment they are
 * created), so only the most recent ones are kept, per caller, in memory. What was recorded lives in Temporal; a
 * receipt lost to a restart or to eviction loses nothing (GetTask then answers "task not found").
 *
 * Bounded by count and by bytes: a receipt holds the message it answers (up to the 1 MiB body, refused ones too), so
 * a thousand of them could hold a gigabyte. The bytes are those of the task as JSON, as GetTask would send it.
 */
import { type ListTasksRequest, type ListTasksResponse, type Task } from '@a2a-js/sdk';
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
  private readonly tasks = new Map<string, { owner: string; task: Task; bytes: number }>();
  private bytes = 0;

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
    this.tasks.set(key, { owner, task: structuredClone(task), bytes });
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
    const after = params.statusTimestampAfter ? Date.parse(params.statusTimestampAfter) : undefined;
    const matching = [...this.tasks.values()]
      .filter((entry) => entry.owner === owner)
      .map((entry) => entry.task)
      .filter((task) => !params.contextId || task.contextId === params.contextId)
      .filter((task) => !params.status || task.status?.state === params.status)
      .filter((task) => after === undefined || Date.parse(task.status?.timestamp ?? '') >= after)
      .reverse();
    const pageSize = Math.min(Math.max(params.pageSize ?? DEFAULT_PAGE_SIZE, 1), MAX_PAGE_SIZE);
    const offset = Number.parseInt(params.pageToken || '0', 10) || 0;
    const page = matching.slice(offset, offset + pageSize).map((task) => {
      const copy = structuredClone(task);
      if (!params.includeArtifacts) copy.artifacts = [];
      if (params.historyLength !== undefined) copy.history = params.historyLength > 0 ? copy.history.slice(-params.historyLength) : [];
      return copy;
    });
    const next = offset + pageSize;
    return { tasks: page, nextPageToken: next < matching.length ? String(next) : '', pageSize, totalSize: matching.length };
  }
}

const ownerOf = (context: ServerCallContext): string => (context.user?.isAuthenticated ? context.user.userName : '');
const keyOf = (owner: string, taskId: string): string => `${owner}\u0000${taskId}`;

