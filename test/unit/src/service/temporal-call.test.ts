/**
 * How Temporal's errors reach the client of the bridge (src/service/temporal-call.ts): RESOURCE_EXHAUSTED (gRPC
 * status 8) is a 503 `temporal-busy` with a Retry-After, not a 500; an unreachable Temporal stays a 503
 * `temporal-unavailable`. Real error classes only: @grpc/grpc-js's status and metadata, @temporalio/client's
 * ServiceError, and, end to end, a gRPC server of our own that answers every call of Temporal's WorkflowService
 * with RESOURCE_EXHAUSTED as a rate-limited frontend does, reached through a real Temporal client and the app.
 */
import {
  Metadata,
  Server,
  ServerCredentials,
  status,
  type ServiceError as GrpcServiceError,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import { Connection, ServiceError, type Client } from '@temporalio/client';
import { NamespaceNotFoundError } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { retryAfterOf, toProblem } from '../../../../src/web/problem.js';
import { TemporalBusyError } from '../../../../src/service/errors.js';
import { createTemporalCall, temporalBusyReason } from '../../../../src/service/temporal-call.js';
import type { PrincipalSpec } from '../../../support/agents.js';
import { listenBridge, send } from '../../../support/bridge.js';

/** A gRPC error as @grpc/grpc-js hands it to a client. */
function grpcError(code: status, details: string): GrpcServiceError {
  return Object.assign(new Error(`${code} ${status[code]}: ${details}`), { code, details, metadata: new Metadata() });
}

/** A Client whose every call rejects with `error`, as a call through the Temporal client does. */
const clientFailingWith = (error: unknown) => ({ withDeadline: () => Promise.reject(error) }) as unknown as Client;

/** What a call made through createTemporalCall rejects with when Temporal answers it with `error`. */
const rejectionOf = (error: unknown): Promise<unknown> =>
  createTemporalCall(clientFailingWith(error), 1_000)(() => Promise.resolve()).catch((e: unknown) => e);

describe('a Temporal call that Temporal refuses with RESOURCE_EXHAUSTED', () => {
  const exhausted = new ServiceError('Failed to start Workflow', {
    cause: grpcError(status.RESOURCE_EXHAUSTED, 'namespace rate limit exceeded'),
  });

  it('is a TemporalBusyError naming the reason', async () => {
    const error = await rejectionOf(exhausted);

    expect(error).toBeInstanceOf(TemporalBusyError);
    expect((error as Error).message).toMatch(
      /^Temporal is overloaded \(RESOURCE_EXHAUSTED: namespace rate limit exceeded\)/,
    );
  });

  it('is answered 503 temporal-busy with Retry-After: 2', async () => {
    const error = await rejectionOf(exhausted);

    expect(toProblem(error)).toMatchObject({
      status: 503,
      type: 'urn:expectations-watcher:problem:temporal-busy',
      title: 'Temporal is overloaded',
    });
    expect(retryAfterOf(error)).toBe(2);
  });

  it('is found however deep in the causes, and only for status 8', () => {
    const wrapped = new Error('outer', { cause: exhausted });

    expect(temporalBusyReason(wrapped)).toBe('namespace rate limit exceeded');
    expect(temporalBusyReason(new ServiceError('x', { cause: grpcError(status.UNAVAILABLE, 'down') }))).toBeUndefined();
    expect(
      temporalBusyReason(new ServiceError('x', { cause: grpcError(status.INVALID_ARGUMENT, 'bad') })),
    ).toBeUndefined();
  });

  it('leaves UNAVAILABLE a 503 temporal-unavailable with Retry-After: 5', async () => {
    const down = new ServiceError('Failed', { cause: grpcError(status.UNAVAILABLE, 'connect ECONNREFUSED') });

    const error = await rejectionOf(down);

    expect(toProblem(error)).toMatchObject({
      status: 503,
      type: 'urn:expectations-watcher:problem:temporal-unavailable',
    });
    expect(retryAfterOf(error)).toBe(5);
  });
});

describe('a Temporal call answered "namespace not found" after the bridge became ready', () => {
  it('is a 503 temporal-unavailable naming the namespace, with Retry-After, not a 500', async () => {
    const error = await rejectionOf(new NamespaceNotFoundError('default'));

    expect(toProblem(error)).toMatchObject({
      status: 503,
      type: 'urn:expectations-watcher:problem:temporal-unavailable',
      detail: expect.stringContaining('namespace "default" does not exist'),
    });
    expect(retryAfterOf(error)).toBe(5);
  });
});

/** A gRPC server of our own answering the WorkflowService methods named in `handlers`, on a free local port. */
async function startFrontend(handlers: UntypedServiceImplementation): Promise<{ server: Server; address: string }> {
  const bytes = (value: Buffer) => value;
  const definition = Object.fromEntries(
    Object.keys(handlers).map((name) => [
      name,
      {
        path: `/temporal.api.workflowservice.v1.WorkflowService/${name}`,
        requestStream: false,
        responseStream: false,
        requestSerialize: bytes,
        requestDeserialize: bytes,
        responseSerialize: bytes,
        responseDeserialize: bytes,
      },
    ]),
  );
  const server = new Server();
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    ),
  );
  server.addService(definition, handlers);
  return { server, address: `127.0.0.1:${port}` };
}

describe('the bridge on a Temporal frontend that answers RESOURCE_EXHAUSTED', () => {
  // Every WorkflowService method the bridge's routes below call, each answered with status 8.
  const methods = [
    'DescribeWorkflowExecution',
    'ExecuteMultiOperation',
    'QueryWorkflow',
    'GetSystemInfo',
    'SignalWithStartWorkflowExecution',
  ];
  let server: Server;
  let connection: Connection;
  let bridge: { url: string; close(): Promise<void> };
  const token = 'reader-token';

  beforeAll(async () => {
    const busy = (_call: unknown, callback: (error: Partial<GrpcServiceError>) => void) =>
      callback({ code: status.RESOURCE_EXHAUSTED, details: 'namespace rate limit exceeded' });
    const frontend = await startFrontend(Object.fromEntries(methods.map((name) => [name, busy])));
    server = frontend.server;
    const { address } = frontend;
    // No retry interceptor: the client's default one retries status 8 with backoff until the call's deadline.
    connection = Connection.lazy({ address, interceptors: [] });
    const principals: PrincipalSpec[] = [
      { id: 'ops', roles: ['reader'] },
      { id: 'feed', roles: ['reporter'] },
    ];
    bridge = await listenBridge(
      connection,
      'busy',
      principals,
      { ops: token, feed: 'feed-token' },
      { temporalWaitMs: 3_000 },
    );
  });

  afterAll(async () => {
    await bridge?.close();
    await connection?.close();
    server.forceShutdown();
  });

  it('answers a read 503 temporal-busy with Retry-After: 2, not 500', async () => {
    const answer = await send(`${bridge.url}/v1/expectations/e-1`, { token });

    expect(answer.status).toBe(503);
    expect(answer.headers.get('retry-after')).toBe('2');
    expect(answer.body).toMatchObject({ type: 'urn:expectations-watcher:problem:temporal-busy', status: 503 });
    expect(answer.body.detail).toContain('namespace rate limit exceeded');
  });

  it('answers a fact 503 temporal-busy, not 500', async () => {
    const answer = await send(`${bridge.url}/v1/facts`, {
      token: 'feed-token',
      json: { facts: [{ factKey: 'k', observedAt: '2026-01-01T00:00:00Z' }] },
    });

    expect(answer.status).toBe(503);
    expect(answer.body.type).toBe('urn:expectations-watcher:problem:temporal-busy');
  });
});

describe('the bridge on a Temporal frontend that answers, but stores no fact within the fact wait', () => {
  // GetSystemInfo answers (Temporal is there); a signal-with-start never does, as a frontend behind its backlog.
  let server: Server;
  let connection: Connection;
  let bridge: { url: string; close(): Promise<void> };

  beforeAll(async () => {
    const frontend = await startFrontend({
      GetSystemInfo: (_call: unknown, callback: (error: null, value: Buffer) => void) =>
        callback(null, Buffer.alloc(0)),
      SignalWithStartWorkflowExecution: () => undefined,
    });
    server = frontend.server;
    connection = Connection.lazy({ address: frontend.address, interceptors: [] });
    const principals: PrincipalSpec[] = [{ id: 'feed', roles: ['reporter'] }];
    bridge = await listenBridge(connection, 'slow', principals, { feed: 'feed-token' }, { factWaitMs: 1_000 });
  });

  afterAll(async () => {
    await bridge?.close();
    await connection?.close();
    server.forceShutdown();
  });

  it('answers 503 fact-not-stored with Retry-After: 1 once the fact wait has passed, not the request wait', async () => {
    const started = Date.now();
    const answer = await send(`${bridge.url}/v1/facts`, {
      token: 'feed-token',
      json: { facts: [{ factKey: 'k', observedAt: '2026-01-01T00:00:00Z' }] },
    });

    expect(answer.status).toBe(503);
    expect(answer.headers.get('retry-after')).toBe('1');
    expect(answer.body).toMatchObject({ type: 'urn:expectations-watcher:problem:fact-not-stored', status: 503 });
    expect(answer.body.detail).toContain('WATCHER_FACT_WAIT');
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
