/**
 * The watcher agent's task store: its tasks are receipts (completed, rejected or failed the moment they are
 * created), so only the most recent ones are kept, per caller, in memory. What was recorded lives in Temporal; a
 * receipt lost to a restart or to eviction loses nothing (GetTask then answers "task not found").
 */
import { type ListTasksRequest, type ListTasksResponse, type Task } from '@a2a-js/sdk';
import type { ServerCallContext, TaskStore } from '@a2a-js/sdk/server';

const DEFAULT_PAGE_SIZE = 50;
const MAX_PAGE_SIZE = 100;

/** A TaskStore holding at most `capacity` tasks; the least recently saved is dropped first. */
export class RecentTaskStore implements TaskStore {
  private readonly tasks = new Map<string, { owner: string; task: Task }>();

  constructor(private readonly capacity = 1_000) {}

  async save(task: Task, context: ServerCallContext): Promise<void> {
    const owner = ownerOf(context);
    const key = keyOf(owner, task.id);
    this.tasks.delete(key); // re-inserted last: most recent
    this.tasks.set(key, { owner, task: structuredClone(task) });
    while (this.tasks.size > this.capacity) {
      const oldest = this.tasks.keys().next().value as string;
      this.tasks.delete(oldest);
    }
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

