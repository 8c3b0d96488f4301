/**
 * The `fetch` the watcher reaches agents with: each resolved address checked against the outbound address policy, no
 * redirect, answers read up to a cap, time-outs on connect and on the whole exchange (docs/operations.md, "Outbound
 * requests to agents"). It answers a real `Response`, so callers and the A2A SDK use it as they use fetch.
 */
import { promises as dns } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { decideAddress, STRICT_RULES, type AddressDecision, type OutboundRules } from './address-policy.js';

/** The cap on an answer's body (a card, a JSON-RPC response): as large as the bridge takes a request. */
export const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;
/** TCP (and TLS) connection set-up. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;
/** From the call to the last byte of the answer, DNS included. */
export const DEFAULT_RESPONSE_TIMEOUT_MS = 20_000;

/** Why the guarded fetch refused: the address policy, a redirect, an answer over the cap. Retrying does not help. */
export type OutboundRefusal = 'denied-address' | 'redirect' | 'too-large' | 'bad-url';

/**
 * A request the guarded fetch would not make or finish. `message` is safe for a record the agent reads (no resolved
 * address, nothing of the answer's body); `detail` is for operators (which address, which range).
 */
export class OutboundRefusedError extends Error {
  override name = 'OutboundRefusedError';
  constructor(
    readonly refusal: OutboundRefusal,
    message: string,
    readonly detail: string = message,
  ) {
    super(message);
  }
}

/** The connection or the whole exchange took too long; named like the DOMException fetch rejects with on a timeout. */
export class OutboundTimeoutError extends Error {
  override name = 'TimeoutError';
}

/** The refusal in `error` or its causes (the SDK may wrap what fetch rejected with). */
export function outboundRefusalOf(error: unknown): OutboundRefusedError | undefined {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if (e instanceof OutboundRefusedError) return e;
  }
  return undefined;
}

export interface ResolvedAddress {
  address: string;
  family: number;
}

export interface GuardedFetchOptions {
  /** WATCHER_OUTBOUND_ALLOW and WATCHER_OUTBOUND_DENY; default none of either (non-public ranges denied). */
  rules?: OutboundRules;
  maxResponseBytes?: number;
  connectTimeoutMs?: number;
  timeoutMs?: number;
  /** A host name's addresses; default the system resolver (`dns.lookup`, /etc/hosts included). */
  resolve?: (hostname: string) => Promise<ResolvedAddress[]>;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const NULL_BODY = new Set([204, 205, 304]);

const systemResolve = (hostname: string) => dns.lookup(hostname, { all: true, verbatim: true });

/** A fetch with the outbound address policy, no redirects, a size cap and timeouts (see the file's comment). */
export function createGuardedFetch(options: GuardedFetchOptions = {}): typeof fetch {
  const rules = options.rules ?? STRICT_RULES;
  const maxBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const timeoutMs = options.timeoutMs ?? DEFAULT_RESPONSE_TIMEOUT_MS;
  const resolve = options.resolve ?? systemResolve;

  return async function guardedFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
    // Checked before the Request is built, which refuses a URL with credentials by a TypeError of its own.
    const url = new URL(input instanceof Request ? input.url : input);
    // Refusals, not network errors: the same card names the same URL, so retrying it for days changes nothing.
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new OutboundRefusedError('bad-url', `fetch failed: ${url.protocol} is not http or https`);
    }
    if (url.username !== '' || url.password !== '') {
      throw new OutboundRefusedError(
        'bad-url',
        `fetch failed: ${url.protocol}//${url.host} names a user in the URL; credentials go in the principal's agent.authorization`,
      );
    }
    // The Request constructor merges input and init as fetch does, and turns any body type into bytes.
    const request = new Request(input, init);
    const where = `${url.origin}${url.pathname}`;
    const deadline = new AbortController();
    const timer = setTimeout(
      () => deadline.abort(new OutboundTimeoutError(`${where} did not answer within ${timeoutMs} ms`)),
      timeoutMs,
    );
    timer.unref();
    const signal = AbortSignal.any([deadline.signal, request.signal]);
    try {
      signal.throwIfAborted();
      const host = url.hostname.replace(/^\[|\]$/g, '');
      const addresses = isIP(host)
        ? [{ address: host, family: isIP(host) }]
        : await untilAborted(resolve(host), signal);
      checkAddresses(rules, url, host, addresses);
      const body = request.body ? Buffer.from(await request.arrayBuffer()) : undefined;
      return await exchange({ url, host, addresses, request, body, signal, maxBytes, connectTimeoutMs, where });
    } finally {
      clearTimeout(timer);
    }
  };
}

/** Refuses unless every address the host resolves to is allowed: one denied answer is enough to stop. */
function checkAddresses(rules: OutboundRules, url: URL, host: string, addresses: ResolvedAddress[]): void {
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  const denied = addresses.map((a) => decideAddress(rules, a.address, port)).find((decision) => !decision.allowed);
  if (!denied) return;
  throw new OutboundRefusedError(
    'denied-address',
    `${url.origin} is outside the outbound address policy (WATCHER_OUTBOUND_ALLOW, WATCHER_OUTBOUND_DENY): nothing was sent`,
    `${url.origin}: ${host === denied.address ? host : `${host} resolves to ${denied.address}, which`} is ${whyDenied(denied)} (port ${port})`,
  );
}

function whyDenied(decision: AddressDecision): string {
  const range = decision.range
    ? `${decision.range.text}${decision.range.name ? ` ${decision.range.name}` : ''}`
    : 'not an IP address';
  if (decision.by === 'deny') return `in ${range}, which WATCHER_OUTBOUND_DENY denies`;
  return `in ${range}, a non-public range WATCHER_OUTBOUND_ALLOW does not allow`;
}

const tooLargeError = (where: string, maxBytes: number) =>
  new OutboundRefusedError(
    'too-large',
    `the answer of ${where} is over the ${maxBytes}-byte cap: the watcher stopped reading it`,
  );

function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

interface Exchange {
  url: URL;
  host: string;
  addresses: ResolvedAddress[];
  request: Request;
  body?: Buffer;
  signal: AbortSignal;
  maxBytes: number;
  connectTimeoutMs: number;
  where: string;
}

/** The request's headers as Node sends them: no compression (the cap counts bytes as they come), a set length. */
function headersOf(request: Request, body: Buffer | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  request.headers.forEach((value, name) => {
    headers[name] = value;
  });
  headers['accept-encoding'] = 'identity';
  if (body) headers['content-length'] = String(body.length);
  return headers;
}

/** A lookup that answers the addresses checked already: the connection goes to them, not to a second DNS answer. */
function pinnedLookup(addresses: ResolvedAddress[]): LookupFunction {
  return (_hostname, lookupOptions, callback) => {
    const first = addresses[0]!;
    if (lookupOptions.all) (callback as (e: null, a: ResolvedAddress[]) => void)(null, addresses);
    else callback(null, first.address, first.family);
  };
}

/** One request on a connection of its own to the checked addresses, its answer read whole up to the cap. */
function exchange({
  url,
  host,
  addresses,
  request,
  body,
  signal,
  maxBytes,
  connectTimeoutMs,
  where,
}: Exchange): Promise<Response> {
  const headers = headersOf(request, body);
  const pinned = pinnedLookup(addresses);

  return new Promise<Response>((resolve, reject) => {
    let settled = false;
    const transport = url.protocol === 'https:' ? https : http;
    const req = transport.request({
      protocol: url.protocol,
      hostname: host,
      port: url.port || undefined,
      path: `${url.pathname}${url.search}`,
      method: request.method,
      headers,
      agent: false,
      lookup: pinned,
    });
    const connectTimer = setTimeout(
      () => fail(new OutboundTimeoutError(`${url.origin} did not accept a connection within ${connectTimeoutMs} ms`)),
      connectTimeoutMs,
    );
    const onAbort = () => fail(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    const done = () => {
      settled = true;
      clearTimeout(connectTimer);
      signal.removeEventListener('abort', onAbort);
    };
    function fail(error: unknown) {
      if (settled) return;
      done();
      req.destroy();
      reject(error instanceof Error ? error : new Error(String(error)));
    }

    req.on('socket', (socket) => {
      socket.once(url.protocol === 'https:' ? 'secureConnect' : 'connect', () => clearTimeout(connectTimer));
    });
    req.on('error', (error) => fail(new TypeError('fetch failed', { cause: error })));
    req.on('response', (res) =>
      readAnswer(res, { where, maxBytes }, fail, (buffer) => {
        if (settled) return;
        done();
        try {
          resolve(toResponse(res, buffer));
        } catch (error) {
          reject(error instanceof Error ? error : new Error(String(error)));
        }
      }),
    );
    req.end(body);
  });
}

/** Reads one answer whole, refusing a redirect and anything over `maxBytes` (announced, or as it streams in). */
function readAnswer(
  res: http.IncomingMessage,
  { where, maxBytes }: { where: string; maxBytes: number },
  fail: (error: unknown) => void,
  succeed: (body: Buffer) => void,
): void {
  const status = res.statusCode ?? 0;
  if (REDIRECTS.has(status)) {
    fail(
      new OutboundRefusedError('redirect', `${where} answered HTTP ${status}, a redirect: the watcher follows none`),
    );
    return;
  }
  if (Number(res.headers['content-length'] ?? 0) > maxBytes) {
    fail(tooLargeError(where, maxBytes));
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  res.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size > maxBytes) fail(tooLargeError(where, maxBytes));
    else chunks.push(chunk);
  });
  res.on('error', (error) => fail(new TypeError('fetch failed: the answer was cut off', { cause: error })));
  res.on('aborted', () => fail(new TypeError('fetch failed: the answer was cut off')));
  res.on('end', () => succeed(Buffer.concat(chunks)));
}

/**
 * An answer's body, read up to `maxBytes` whatever fetch gave it (the guarded fetch caps it already; an injected one
 * may not): over the cap, reading stops and the stream is cancelled.
 */
export async function readCapped(response: Response, maxBytes: number, where: string): Promise<Buffer> {
  if (!response.body) return Buffer.alloc(0);
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return Buffer.concat(chunks);
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      throw tooLargeError(where, maxBytes);
    }
    chunks.push(value);
  }
}

function toResponse(res: http.IncomingMessage, body: Buffer): Response {
  const status = res.statusCode ?? 0;
  if (status < 200 || status > 599) throw new TypeError(`fetch failed: HTTP status ${status} is not one fetch answers`);
  const headers = new Headers();
  for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) headers.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
  const payload = NULL_BODY.has(status) ? null : body;
  try {
    return new Response(payload, { status, statusText: res.statusMessage ?? '', headers });
  } catch {
    // A reason phrase fetch would not take (it is only decoration): the status says it all.
    return new Response(payload, { status, headers });
  }
}
