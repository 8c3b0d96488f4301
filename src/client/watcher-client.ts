/**
 * `WatcherClient`: one call for every route of the bridge's HTTP API (DESIGN 4, docs/api.md), typed answers, and a
 * `WatcherProblemError` for every error answer. `fetch` is injected (the global one by default), as the A2A JS SDK
 * does, so a test or a runtime can hand its own.
 */
import { EXTENSION_URI } from '../schemas/extension.js';
import { WatcherProblemError } from './errors.js';
import type {
  A2AEventBody,
  EventResult,
  ExpectationPage,
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
}

/** Per call: an AbortSignal to cancel it (e.g. `AbortSignal.timeout(5_000)`). */
export interface CallOptions {
  signal?: AbortSignal;
}

const LIST_PARAMETERS = ['subjectType', 'subjectId', 'state', 'kind', 'pageSize', 'pageToken'] as const;

export class WatcherClient {
  readonly #baseUrl: string;
  readonly #token: string;
  readonly #fetch: typeof fetch;

  constructor(options: WatcherClientOptions) {
    // Refused here, not at the first call: `localhost:3000` parses as a URL of scheme `localhost:`.
    const base = new URL(options.baseUrl);
    if (base.protocol !== 'http:' && base.protocol !== 'https:') {
      throw new TypeError(`baseUrl must be an http(s) URL such as http://localhost:3000, not '${options.baseUrl}'`);
    }
    this.#baseUrl = base.href.replace(/\/+$/, '');
    this.#token = options.token;
    this.#fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
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

  /** `POST /v1/expectations/{id}/withdraw`; a closed expectation answers `not-open`. */
  withdraw(expectationId: string, reason: string, options?: CallOptions): Promise<WithdrawResult> {
    return this.#call('POST', `/v1/expectations/${encodeURIComponent(expectationId)}/withdraw`, { body: { reason }, ...options });
  }

  /**
   * `POST /v1/expectations/{id}/lapses/{messageId}/resend` (admins): delivers again a lapse that failed for good,
   * named by its `delivery.messageId` on the record; never sends one that is on its way or delivered.
   */
  resendLapse(expectationId: string, messageId: string, options?: CallOptions): Promise<ResendResult> {
    const path = `/v1/expectations/${encodeURIComponent(expectationId)}/lapses/${encodeURIComponent(messageId)}/resend`;
    return this.#call('POST', path, options);
  }

  /** `GET /healthz`: the bridge process runs. */
  health(options?: CallOptions): Promise<Health> {
    return this.#call('GET', '/healthz', { anonymous: true, ...options });
  }

  /** `GET /readyz`: Temporal answers; a 503 WatcherProblemError (with `retryAfter`) otherwise. */
  ready(options?: CallOptions): Promise<Readiness> {
    return this.#call('GET', '/readyz', { anonymous: true, ...options });
  }

  async #call<T>(
    method: 'GET' | 'POST',
    path: string,
    options: CallOptions & { body?: unknown; anonymous?: boolean; extension?: boolean } = {},
  ): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json, application/problem+json' };
    if (!options.anonymous) headers.authorization = `Bearer ${this.#token}`;
    if (options.extension) headers['a2a-extensions'] = EXTENSION_URI;
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    const response = await this.#fetch(`${this.#baseUrl}${path}`, {
      method,
      headers,
      ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    const text = await response.text();
    const request = { method, path };
    if (!response.ok) throw WatcherProblemError.fromResponse(request, response, text);
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new Error(`${method} ${path}: ${response.status} with a body that is not JSON: ${text.slice(0, 200)}`);
    }
  }
}
