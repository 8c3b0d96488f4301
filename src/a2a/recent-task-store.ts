/**
 * The watcher agent's task store: its receipts, the most recent per caller, in memory, bounded by count and by bytes,
 * listed with sealed page tokens (docs/api.md, "The watcher as an A2A agent"). What they recorded lives in Temporal.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { type ListTasksRequest, type ListTasksResponse, type Task } from '@a2a-js/sdk';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import type { ServerCallContext, TaskStore } from '@a2a-js/sdk/server';

const DEFAULT_PAGE_SIZE = 50;
const MAX_PAGE_SIZE = 100;

/** How many receipts are kept unless the endpoint says otherwise. */
export const DEFAULT_RECEIPTS = 1_000;
/** How many bytes of receipts are kept unless the endpoint says otherwise: 32 MiB. */
export const DEFAULT_RECEIPT_BYTES = 32 * 1024 * 1024;
/** What one owner may keep unless the endpoint says otherwise: 200 receipts, 4 MiB (a few of the largest messages). */
export const DEFAULT_OWNER_BUDGET: Budget = { tasks: 200, bytes: 4 * 1024 * 1024 };

/** How many receipts, and how many bytes of them, may be kept. */
export interface Budget {
  tasks: number;
  bytes: number;
}

/** The size of a task as JSON (UTF-8), bytes of file parts as base64: what the store counts against its bound. */
export function receiptBytes(task: Task): number {
  const json = JSON.stringify(task, (_key, value: unknown) =>
    value instanceof Uint8Array ? Buffer.from(value).toString('base64') : value,
  );
  return Buffer.byteLength(json, 'utf8');
}

interface Receipt {
  task: Task;
  bytes: number;
  /** Its owner's own sequence: no other owner's saves move it. */
  seq: number;
}

/** One owner's receipts, least recently saved first. */
interface Shelf {
  receipts: Map<string, Receipt>;
  bytes: number;
  seq: number;
}

/**
 * A TaskStore holding at most `capacity` tasks and `maxBytes` bytes of them, and at most `perOwner` of one owner's;
 * the least recently saved is dropped first, and a task larger than the owner's budget on its own is not kept
 * (GetTask answers "task not found").
 */
export class RecentTaskStore implements TaskStore {
  // An owner's shelf stays when emptied, so that its sequence never restarts under a token handed out before.
  private readonly shelves = new Map<string, Shelf>();
  private tasks = 0;
  private bytes = 0;
  private readonly tokenKey = randomBytes(32);
  private readonly perOwner: Budget;

  constructor(
    private readonly capacity = DEFAULT_RECEIPTS,
    private readonly maxBytes = DEFAULT_RECEIPT_BYTES,
    perOwner: Budget = DEFAULT_OWNER_BUDGET,
  ) {
    this.perOwner = { tasks: Math.min(perOwner.tasks, capacity), bytes: Math.min(perOwner.bytes, maxBytes) };
  }

  /** How many tasks the store keeps, and how many bytes they take. */
  get size(): { tasks: number; bytes: number } {
    return { tasks: this.tasks, bytes: this.bytes };
  }

  /** What one owner's kept tasks take. */
  sizeOf(owner: string): { tasks: number; bytes: number } {
    const shelf = this.shelves.get(owner);
    return { tasks: shelf?.receipts.size ?? 0, bytes: shelf?.bytes ?? 0 };
  }

  async save(task: Task, context: ServerCallContext): Promise<void> {
    const shelf = this.shelfOf(ownerOf(context));
    this.remove(shelf, task.id); // re-inserted last: most recent
    const bytes = receiptBytes(task);
    if (bytes > this.perOwner.bytes) return;
    shelf.receipts.set(task.id, { task: structuredClone(task), bytes, seq: ++shelf.seq });
    shelf.bytes += bytes;
    this.tasks++;
    this.bytes += bytes;
    while (shelf.receipts.size > this.perOwner.tasks || shelf.bytes > this.perOwner.bytes) this.dropOldest(shelf);
    while (this.tasks > this.capacity || this.bytes > this.maxBytes) {
      this.dropOldest(this.largest(this.bytes > this.maxBytes ? 'bytes' : 'tasks'));
    }
  }

  async load(taskId: string, context: ServerCallContext): Promise<Task | undefined> {
    const receipt = this.shelves.get(ownerOf(context))?.receipts.get(taskId);
    return receipt ? structuredClone(receipt.task) : undefined;
  }

  async list(params: ListTasksRequest, context: ServerCallContext): Promise<ListTasksResponse> {
    const owner = ownerOf(context);
    const before = params.pageToken ? this.readToken(owner, params.pageToken) : Number.POSITIVE_INFINITY;
    const after = params.statusTimestampAfter ? Date.parse(params.statusTimestampAfter) : undefined;
    const matching = [...(this.shelves.get(owner)?.receipts.values() ?? [])]
      .filter(({ task }) => !params.contextId || task.contextId === params.contextId)
      .filter(({ task }) => !params.status || task.status?.state === params.status)
      .filter(({ task }) => after === undefined || Date.parse(task.status?.timestamp ?? '') >= after)
      .reverse();
    const pageSize = Math.min(Math.max(params.pageSize ?? DEFAULT_PAGE_SIZE, 1), MAX_PAGE_SIZE);
    const rest = matching.filter((receipt) => receipt.seq < before);
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

  private shelfOf(owner: string): Shelf {
    let shelf = this.shelves.get(owner);
    if (!shelf) this.shelves.set(owner, (shelf = { receipts: new Map(), bytes: 0, seq: 0 }));
    return shelf;
  }

  private remove(shelf: Shelf, taskId: string): void {
    const receipt = shelf.receipts.get(taskId);
    if (!receipt) return;
    shelf.receipts.delete(taskId);
    shelf.bytes -= receipt.bytes;
    this.tasks--;
    this.bytes -= receipt.bytes;
  }

  private dropOldest(shelf: Shelf): void {
    this.remove(shelf, shelf.receipts.keys().next().value as string);
  }

  /** The shelf holding the most bytes (or tasks): the one that gives way when the store is over its bound. */
  private largest(by: 'bytes' | 'tasks'): Shelf {
    let found: Shelf | undefined;
    for (const shelf of this.shelves.values()) {
      const measure = (s: Shelf) => (by === 'bytes' ? s.bytes : s.receipts.size);
      if (!found || measure(shelf) > measure(found)) found = shelf;
    }
    return found!;
  }

  /** A page token: the owner's sequence number of the page's last receipt, sealed for that owner. */
  private token(owner: string, seq: number): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.tokenKey, iv).setAAD(Buffer.from(owner, 'utf8'));
    const plain = Buffer.alloc(8);
    plain.writeBigUInt64BE(BigInt(seq));
    const sealed = Buffer.concat([cipher.update(plain), cipher.final()]);
    return Buffer.concat([iv, sealed, cipher.getAuthTag()]).toString('base64url');
  }

  /** The sequence number a page token names, or a RequestMalformedError when the store did not hand it to `owner`. */
  private readToken(owner: string, token: string): number {
    const raw = /^[A-Za-z0-9_-]{48}$/.test(token) ? Buffer.from(token, 'base64url') : Buffer.alloc(0);
    try {
      if (raw.length !== 36) throw new Error('not a token');
      const decipher = createDecipheriv('aes-256-gcm', this.tokenKey, raw.subarray(0, 12))
        .setAAD(Buffer.from(owner, 'utf8'))
        .setAuthTag(raw.subarray(20));
      const plain = Buffer.concat([decipher.update(raw.subarray(12, 20)), decipher.final()]);
      return Number(plain.readBigUInt64BE());
    } catch {
      throw new RequestMalformedError({
        message:
          'Invalid params: params.pageToken is unknown: pass the nextPageToken of an earlier ListTasks answer (tokens do not ' +
          'survive a restart of the watcher), or none for the first page',
        metadata: { field: 'params.pageToken' },
      });
    }
  }
}

const ownerOf = (context: ServerCallContext): string => (context.user?.isAuthenticated ? context.user.userName : '');
