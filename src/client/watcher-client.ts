/**
 * `WatcherClient`: one call for every route of the bridge's HTTP API (DESIGN 4, docs/api.md), typed answers, and a
 * `WatcherProblemError` for every error answer. A 503, a 429 or a dropped connection is sent again after its
 * Retry-After (retry.ts), within a total wait. `fetch`, the clock and the sleep are injected (the global ones by
 * default), as the A2A JS SDK does with fetch, so a test or a runtime can hand its own.
 */
import { EXTENSION_URI } from '../../core/schemas/extension.js';
import { WatcherProblemError, type ProblemRequest } from './errors.js';
import { isDroppedConnection, nextWait, RETRIED_STATUSES, retryPolicy, sleep, type RetryOptions } from './retry.js';
import type {
  A2AEventBody,
  EventResult,
  ExpectationPage,
  Statistics,
  StatisticsFilter,
  ExpectationRecord,
  ExpectationSummary,
  FactInput,
  FactsResult,
  Health,
  ListFilter,
  Readiness,
  ResendResult,
  WithdrawResult,
} from './types.js';

export interface WatcherClientOptions {
  /** The bridge, e.g. `http://localhost:3000` (a path prefix is kept: `https://host/watcher`). */
  baseUrl: string;
  /** The principal's bearer token (sent on every route but `/healthz` and `/readyz`). */
  token: string;
  /** Defaults to the global `fetch`. */
  fetch?: typeof fetch;
  /**
   * Sending a request again after a 503, a 429 or a dropped connection, on by default (`{}`: within 60 s); `false`
   * throws the first. `health` and `ready` are not retried unless their call passes `retry`.
   */
  retry?: RetryOptions | false;
  /** The clock of the total wait and of a Retry-After given as a date (defaults to `Date.now`). */
  now?: () => number;
  /** Waits between attempts; must reject when `signal` aborts (defaults to a timer). */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/** Per call: an AbortSignal to cancel it, waits between attempts included (e.g. `AbortSignal.timeout(5_000)`). */
export interface CallOptions {
  signal?: AbortSignal;
  /** This call's retry, over the client's (`false`: throw the first 503 or 429). */
  retry?: RetryOptions | false;
}

/** What `#call` is told besides the caller's options. */
interface RequestOptions extends CallOptions {
  body?: unknown;
  anonymous?: boolean;
  extension?: boolean;
  /** A probe's 503 is its answer: retried only when the call passes `retry`. */
  probe?: boolean;
}

const LIST_PARAMETERS = ['subjectType', 'subjectId', 'state', 'kind', 'pageSize', 'pageToken'] as const;

export class WatcherClient {
  readonly #baseUrl: string;
  readonly #token: string;
  readonly #fetch: typeof fetch;
  readonly #retry: RetryOptions | false | undefined;
  readonly #now: () => number;
  readonly #sleep: (ms: number, signal?: AbortSignal) => Promise<void>;

  constructor(options: WatcherClientOptions) {
    // Refused here, not at the first call: `localhost:3000` parses as a URL of scheme `localhost:`.
    const base = new URL(options.baseUrl);
    if (base.protocol !== 'http:' && base.protocol !== 'https:') {
      throw new TypeError(`baseUrl must be an http(s) URL such as http://localhost:3000, not '${options.baseUrl}'`);
    }
    this.#baseUrl = base.href.replace(/\/+$/, '');
    this.#token = options.token;
    this.#fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.#retry = options.retry;
    retryPolicy(options.retry, undefined); // a bad total wait throws here, not at the first 503
    this.#now = options.now ?? Date.now;
    this.#sleep = options.sleep ?? sleep;
  }

  /**
   * `POST /a2a/events`: one A2A object (e.g. `artifactUpdateEvent(...)`) whose `metadata[EXTENSION_URI]` raises
   * expectations, reports facts or withdraws; one result per item.
   */
  sendEvent(event: A2AEventBody, options?: CallOptions): Promise<EventResult> {
    return this.#call('POST', '/a2a/events', { body: event, extension: true, ...options });
  }

  /**
   * `POST /v1/facts`: facts from a feed that does not speak A2A (at least one). With `wait: true` the answer comes
   * once the expectations waiting on each fact have taken it (at most 5 s), and lists those you may read.
   */
  reportFacts(facts: readonly FactInput[], options: CallOptions & { wait?: boolean } = {}): Promise<FactsResult> {
    const { wait, ...call } = options;
    return this.#call('POST', wait ? '/v1/facts?wait=true' : '/v1/facts', { body: { facts }, ...call });
  }

  /** `GET /v1/expectations/{id}`: the record (404 for an unknown id, 403 for another agent's). */
  getExpectation(expectationId: string, options?: CallOptions): Promise<ExpectationRecord> {
    return this.#call('GET', `/v1/expectations/${encodeURIComponent(expectationId)}`, options);
  }

  /** `GET /v1/expectations`: one page of summaries from the visibility store (eventually consistent). */
  listExpectations(filter: ListFilter = {}, options?: CallOptions): Promise<ExpectationPage> {
    const query = new URLSearchParams();
    for (const name of LIST_PARAMETERS) {
      const value = filter[name];
      if (value !== undefined) query.set(name, String(value));
    }
    const search = query.toString();
    return this.#call('GET', `/v1/expectations${search ? `?${search}` : ''}`, options);
  }

  /** Every summary the filter lists, page after page (`pageSize` per request), until the last page. */
  async *allExpectations(
    filter: Omit<ListFilter, 'pageToken'> = {},
    options?: CallOptions,
  ): AsyncGenerator<ExpectationSummary, void, undefined> {
    let pageToken: string | undefined;
    do {
      const page = await this.listExpectations({ ...filter, ...(pageToken ? { pageToken } : {}) }, options);
      yield* page.items;
      pageToken = page.nextPageToken;
    } while (pageToken);
  }

  /** `GET /v1/statistics`: what each kind actually did over the window (an agent reads its own). */
  statistics(filter: StatisticsFilter = {}, options?: CallOptions): Promise<Statistics> {
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(filter)) if (value !== undefined) query.set(name, value);
    const search = query.toString();
    return this.#call('GET', `/v1/statistics${search ? `?${search}` : ''}`, options);
  }

  /** `POST /v1/expectations/{id}/withdraw`; a closed expectation answers `not-open`. */
  withdraw(expectationId: string, reason: string, options?: CallOptions): Promise<WithdrawResult> {
    return this.#call('POST', `/v1/expectations/${encodeURIComponent(expectationId)}/withdraw`, {
      body: { reason },
      ...options,
    });
  }

  /**
   * `POST /v1/expectations/{id}/lapses/{messageId}/resend` (admins): delivers again a lapse that failed for good,
   * named by its `delivery.messageId` on the record; never sends one that is on its way or delivered.
   */
  resendLapse(expectationId: string, messageId: string, options?: CallOptions): Promise<ResendResult> {
    const path = `/v1/expectations/${encodeURIComponent(expectationId)}/lapses/${encodeURIComponent(messageId)}/resend`;
    return this.#call('POST', path, options);
  }

  /** `GET /healthz`: the bridge process runs. Not retried unless `options.retry` is given. */
  health(options?: CallOptions): Promise<Health> {
    return this.#call('GET', '/healthz', { anonymous: true, probe: true, ...options });
  }

  /**
   * `GET /readyz`: Temporal answers; a 503 WatcherProblemError (with `retryAfter`) otherwise, at once unless
   * `options.retry` is given (`ready({ retry: { totalWaitMs: 30_000 } })` waits for the bridge to be ready).
   */
  ready(options?: CallOptions): Promise<Readiness> {
    return this.#call('GET', '/readyz', { anonymous: true, probe: true, ...options });
  }

  async #call<T>(method: 'GET' | 'POST', path: string, options: RequestOptions = {}): Promise<T> {
    const policy = retryPolicy(this.#retry, options.retry, !options.probe);
    const headers: Record<string, string> = { accept: 'application/json, application/problem+json' };
    if (!options.anonymous) headers.authorization = `Bearer ${this.#token}`;
    if (options.extension) headers['a2a-extensions'] = EXTENSION_URI;
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    // Built once: every attempt sends the same bytes, which the bridge's idempotence is stated for.
    const init: RequestInit = {
      method,
      headers,
      ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    };
    const request = { method, path };
    const started = this.#now();
    for (let attempt = 1; ; attempt++) {
      const outcome = await this.#attempt<T>(request, init, attempt);
      if ('answer' in outcome) return outcome.answer;
      const elapsedMs = this.#now() - started;
      const wait = policy && outcome.retried ? nextWait(policy, attempt, outcome.retryAfter, elapsedMs) : undefined;
      if (wait === undefined) throw outcome.failure;
      await this.#sleep(wait, options.signal);
    }
  }

  /** One attempt: the answer, or what failed and whether the contract lets the same request be sent again. */
  async #attempt<T>(
    request: ProblemRequest,
    init: RequestInit,
    attempt: number,
  ): Promise<{ answer: T } | { failure: unknown; retried: boolean; retryAfter?: number | undefined }> {
    let response: Response;
    let text: string;
    try {
      response = await this.#fetch(`${this.#baseUrl}${request.path}`, init);
      text = await response.text();
    } catch (error) {
      return { failure: error, retried: isDroppedConnection(error) };
    }
    if (response.ok) return { answer: parseAnswer<T>(request, response, text) };
    const problem = WatcherProblemError.fromResponse(request, response, text, this.#now(), attempt);
    return { failure: problem, retried: RETRIED_STATUSES.has(response.status), retryAfter: problem.retryAfter };
  }
}

/** The JSON of a 2xx answer; a body that is none (a proxy's page) says so. */
function parseAnswer<T>(request: ProblemRequest, response: Response, text: string): T {
  try {
    return JSON.parse(text) as T;
  } catch {
    const what = `${request.method} ${request.path}: ${response.status}`;
    throw new Error(`${what} with a body that is not JSON: ${text.slice(0, 200)}`);
  }
}
