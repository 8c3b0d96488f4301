/**
 * The guarded fetch (activities/outbound/guarded-fetch.ts) against real sockets on loopback: what the outbound address policy
 * stops before any connection, that the connection goes to the address that was checked, no redirect followed, the
 * size cap, the timeouts. Connections are counted by the listening sockets themselves.
 */
import { once } from 'node:events';
import http from 'node:http';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../../src/config.js';
import type { OutboundRules } from '../../../../activities/outbound/address-policy.js';
import { createGuardedFetch, OutboundRefusedError, readCapped } from '../../../../activities/outbound/guarded-fetch.js';

/** The rules WATCHER_OUTBOUND_ALLOW / _DENY give on an existing cluster. */
const rules = (env: { WATCHER_OUTBOUND_ALLOW?: string; WATCHER_OUTBOUND_DENY?: string } = {}): OutboundRules =>
  loadConfig({ TEMPORAL_ADDRESS: 'temporal:7233', ...env }).outbound;

interface Listener {
  port: number;
  /** Connections accepted, whatever came over them. */
  connections: number;
  requests: { method?: string; url?: string; headers: http.IncomingHttpHeaders; body: string }[];
  close(): Promise<void>;
}

const listeners: Listener[] = [];
afterEach(async () => {
  await Promise.all(listeners.splice(0).map((listener) => listener.close()));
});

/** An HTTP server on `host` that counts its connections and records its requests; `handle` answers them. */
async function serve(
  handle: (req: http.IncomingMessage, res: http.ServerResponse) => void,
  host = '127.0.0.1',
): Promise<Listener> {
  const requests: Listener['requests'] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      requests.push({ method: req.method, url: req.url, headers: req.headers, body });
      handle(req, res);
    });
  });
  const listener: Listener = { port: 0, connections: 0, requests, close: () => closeServer(server) };
  server.on('connection', () => listener.connections++);
  server.listen(0, host);
  await once(server, 'listening');
  listener.port = (server.address() as net.AddressInfo).port;
  listeners.push(listener);
  return listener;
}

/** A TCP server that accepts and never says a word (no HTTP, no TLS). */
async function silent(): Promise<Listener> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    listener.connections++;
  });
  const listener: Listener = {
    port: 0,
    connections: 0,
    requests: [],
    close: () => {
      for (const socket of sockets) socket.destroy();
      return closeServer(server);
    },
  };
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  listener.port = (server.address() as net.AddressInfo).port;
  listeners.push(listener);
  return listener;
}

function closeServer(server: net.Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    if (server instanceof http.Server) server.closeAllConnections();
  });
}

const refusalOf = async (call: Promise<unknown>) => {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(OutboundRefusedError);
  return error as OutboundRefusedError;
};

const json = (res: http.ServerResponse, body: unknown, status = 200) => {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
};

describe('the outbound address policy', () => {
  it('lets through an allowed address: the request as sent, the answer whole as a Response', async () => {
    const agent = await serve((_req, res) => json(res, { ok: true }, 201));
    const guarded = createGuardedFetch({ rules: rules({ WATCHER_OUTBOUND_ALLOW: 'loopback' }) });

    const response = await guarded(`http://127.0.0.1:${agent.port}/a2a?x=1`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer t' },
      body: '{"jsonrpc":"2.0"}',
    });

    expect([response.status, response.ok, response.headers.get('content-type'), await response.json()]).toEqual([
      201,
      true,
      'application/json',
      { ok: true },
    ]);
    expect(agent.requests).toEqual([
      expect.objectContaining({
        method: 'POST',
        url: '/a2a?x=1',
        body: '{"jsonrpc":"2.0"}',
        headers: expect.objectContaining({
          authorization: 'Bearer t',
          'accept-encoding': 'identity',
          'content-length': '17',
        }),
      }),
    ]);
  });

  it("connects only to the port an entry with a port allows, not to the host's other services", async () => {
    const agent = await serve((_req, res) => json(res, { ok: true }));
    const metrics = await serve((_req, res) => json(res, { secret: true }));
    const guarded = createGuardedFetch({ rules: rules({ WATCHER_OUTBOUND_ALLOW: `127.0.0.1:${agent.port}` }) });

    const allowed = await guarded(`http://127.0.0.1:${agent.port}/card`);
    const refused = await refusalOf(guarded(`http://127.0.0.1:${metrics.port}/metrics`));

    expect(allowed.status).toBe(200);
    expect(refused.refusal).toBe('denied-address');
    expect(refused.detail).toContain(`(port ${metrics.port})`);
    expect(metrics.connections).toBe(0);
  });

  it('makes no connection to a denied address literal, and says so without naming more than the URL', async () => {
    const listening = await serve((_req, res) => json(res, {}));
    const guarded = createGuardedFetch(); // no allow list: loopback is denied

    const refused = await refusalOf(guarded(`http://127.0.0.1:${listening.port}/.well-known/agent-card.json`));

    expect(refused.refusal).toBe('denied-address');
    expect(refused.message).toBe(
      `http://127.0.0.1:${listening.port} is outside the outbound address policy (WATCHER_OUTBOUND_ALLOW, WATCHER_OUTBOUND_DENY): nothing was sent`,
    );
    expect(refused.detail).toContain('127.0.0.0/8 loopback');
    expect(listening.connections).toBe(0);
  });

  it('denies a host name by what it resolves to, without putting the resolved address in the message', async () => {
    const guarded = createGuardedFetch({ resolve: async () => [{ address: '169.254.169.254', family: 4 }] });

    const refused = await refusalOf(guarded('http://metadata.internal/latest/meta-data/'));

    expect(refused.message).not.toContain('169.254');
    expect(refused.detail).toBe(
      'http://metadata.internal: metadata.internal resolves to 169.254.169.254, which is in 169.254.0.0/16 link-local (cloud metadata services), a non-public range WATCHER_OUTBOUND_ALLOW does not allow (port 80)',
    );
  });

  it('checks every address a name resolves to: one denied is enough, and nothing is connected', async () => {
    const allowed = await serve((_req, res) => json(res, {}));
    const guarded = createGuardedFetch({
      rules: rules({ WATCHER_OUTBOUND_ALLOW: '127.0.0.1', WATCHER_OUTBOUND_DENY: '10.9.0.0/16' }),
      resolve: async () => [
        { address: '127.0.0.1', family: 4 },
        { address: '10.9.1.1', family: 4 },
      ],
    });

    const refused = await refusalOf(guarded(`http://two-faced.test:${allowed.port}/card`));

    expect(refused.detail).toContain('10.9.1.1, which is in 10.9.0.0/16, which WATCHER_OUTBOUND_DENY denies');
    expect(allowed.connections).toBe(0);
  });

  it('denies an IPv4-mapped IPv6 literal of loopback as loopback', async () => {
    const refused = await refusalOf(createGuardedFetch()('http://[::ffff:127.0.0.1]:1/card'));

    expect(refused.detail).toContain('127.0.0.0/8 loopback');
  });

  it('connects to the address it checked: the name is resolved once, and a second answer cannot switch it', async () => {
    const agent = await serve((_req, res) => json(res, { reached: 'checked address' }));
    const answers = ['127.0.0.1', '10.0.0.1']; // a rebinding resolver: allowed first, internal after
    let resolved = 0;
    const guarded = createGuardedFetch({
      rules: rules({ WATCHER_OUTBOUND_ALLOW: '127.0.0.1' }),
      resolve: async () => [{ address: answers[resolved++]!, family: 4 }],
    });

    const response = await guarded(`http://agent.rebinding.test:${agent.port}/card`);

    expect(await response.json()).toEqual({ reached: 'checked address' });
    expect(resolved).toBe(1);
    expect(agent.requests[0]?.headers.host).toBe(`agent.rebinding.test:${agent.port}`);
  });

  it('answers a network error as fetch does (TypeError, its cause the socket error)', async () => {
    const closedPort = await serve(() => undefined).then(async (l) => {
      await l.close();
      listeners.splice(listeners.indexOf(l), 1);
      return l.port;
    });

    const error = await createGuardedFetch({ rules: rules({ WATCHER_OUTBOUND_ALLOW: 'loopback' }) })(
      `http://127.0.0.1:${closedPort}/`,
    ).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error & { cause: { code?: string } }).cause.code).toBe('ECONNREFUSED');
  });

  it('refuses what is not http or https, and a URL with userinfo, as refusals (never retried)', async () => {
    const file = await refusalOf(createGuardedFetch()('file:///etc/passwd'));
    const userinfo = await refusalOf(createGuardedFetch()('https://agent:secret@agents.example/card.json'));

    expect([file.refusal, file.message]).toEqual(['bad-url', 'fetch failed: file: is not http or https']);
    expect(userinfo.refusal).toBe('bad-url');
    expect(userinfo.message).not.toContain('secret');
  });
});

describe('redirects', () => {
  it.each([301, 302, 303, 307, 308])(
    'refuses a %i without following it, and without reading its body',
    async (status) => {
      const target = await serve((_req, res) => json(res, { secret: 'from the redirect target' }));
      const redirecting = await serve((_req, res) => {
        res
          .writeHead(status, { location: `http://127.0.0.1:${target.port}/internal` })
          .end('<p>moved, see the internal page</p>');
      });
      const guarded = createGuardedFetch({ rules: rules({ WATCHER_OUTBOUND_ALLOW: 'loopback' }) });

      const refused = await refusalOf(guarded(`http://127.0.0.1:${redirecting.port}/card`, { redirect: 'follow' }));

      expect(refused.refusal).toBe('redirect');
      expect(refused.message).toBe(
        `http://127.0.0.1:${redirecting.port}/card answered HTTP ${status}, a redirect: the watcher follows none`,
      );
      expect(target.connections).toBe(0);
    },
  );
});

describe('the size cap', () => {
  const loopback = rules({ WATCHER_OUTBOUND_ALLOW: 'loopback' });

  it('stops reading 50 MB at the 1 MiB cap: the server never gets to send it all', async () => {
    let finished: boolean | undefined;
    const flood = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }); // no content-length: the stream itself must be cut
      const chunk = Buffer.alloc(64 * 1024, 'a');
      let sent = 0;
      const pump = () => {
        while (sent < 50 * 1024 * 1024) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      res.on('close', () => (finished = res.writableFinished));
      pump();
    });

    const started = Date.now();
    const refused = await refusalOf(createGuardedFetch({ rules: loopback })(`http://127.0.0.1:${flood.port}/a2a`));

    expect(refused.refusal).toBe('too-large');
    expect(refused.message).toBe(
      `the answer of http://127.0.0.1:${flood.port}/a2a is over the 1048576-byte cap: the watcher stopped reading it`,
    );
    await expect.poll(() => finished).toBe(false);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('refuses at once an answer whose Content-Length is over the cap', async () => {
    const big = await serve((_req, res) =>
      res.writeHead(200, { 'content-length': String(2 * 1024 * 1024) }).write('{'),
    );

    expect((await refusalOf(createGuardedFetch({ rules: loopback })(`http://127.0.0.1:${big.port}/`))).refusal).toBe(
      'too-large',
    );
  });

  it('takes an answer of exactly the cap, and refuses one byte more', async () => {
    const sized = await serve((req, res) => res.end('x'.repeat(Number(req.url!.slice(1)))));
    const guarded = createGuardedFetch({ rules: loopback, maxResponseBytes: 1000 });

    expect((await (await guarded(`http://127.0.0.1:${sized.port}/1000`)).text()).length).toBe(1000);
    expect((await refusalOf(guarded(`http://127.0.0.1:${sized.port}/1001`))).refusal).toBe('too-large');
  });

  it('caps a body another fetch gave (readCapped), cancelling the rest of the stream', async () => {
    let cancelled = false;
    const endless = new ReadableStream<Uint8Array>({
      pull: (controller) => controller.enqueue(new Uint8Array(4096)),
      cancel: () => void (cancelled = true),
    });

    const refused = await refusalOf(readCapped(new Response(endless), 10_000, 'http://agent/card'));

    expect(refused.message).toBe(
      'the answer of http://agent/card is over the 10000-byte cap: the watcher stopped reading it',
    );
    expect(cancelled).toBe(true);
    expect((await readCapped(new Response('small'), 10_000, 'x')).toString()).toBe('small');
  });
});

describe('timeouts', () => {
  const loopback = rules({ WATCHER_OUTBOUND_ALLOW: 'loopback' });

  it('gives up on a connection that is not set up in time (a TLS handshake nobody answers)', async () => {
    const mute = await silent();
    const started = Date.now();

    const error = await createGuardedFetch({ rules: loopback, connectTimeoutMs: 200, timeoutMs: 30_000 })(
      `https://127.0.0.1:${mute.port}/card`,
    ).catch((e: unknown) => e);

    expect(error).toMatchObject({
      name: 'TimeoutError',
      message: `https://127.0.0.1:${mute.port} did not accept a connection within 200 ms`,
    });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(mute.connections).toBe(1);
  });

  it('gives up on an answer that does not finish in time (headers sent, the body stalls)', async () => {
    const stalling = await serve((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).write('{"par'),
    );

    const error = await createGuardedFetch({ rules: loopback, timeoutMs: 300 })(
      `http://127.0.0.1:${stalling.port}/a2a`,
    ).catch((e: unknown) => e);

    expect(error).toMatchObject({
      name: 'TimeoutError',
      message: `http://127.0.0.1:${stalling.port}/a2a did not answer within 300 ms`,
    });
  });

  it("stops at the caller's signal with the signal's reason", async () => {
    const stalling = await serve(() => undefined);
    const reason = new Error('the attempt is over');
    const controller = new AbortController();
    setTimeout(() => controller.abort(reason), 100);

    await expect(
      createGuardedFetch({ rules: loopback })(`http://127.0.0.1:${stalling.port}/`, { signal: controller.signal }),
    ).rejects.toBe(reason);
  });
});

describe('answers fetch gives as they are', () => {
  it('gives statuses without a body (204) and error statuses with theirs', async () => {
    const answering = await serve((req, res) =>
      req.url === '/none' ? res.writeHead(204).end() : json(res, { error: 'no' }, 503),
    );
    const guarded = createGuardedFetch({ rules: rules({ WATCHER_OUTBOUND_ALLOW: 'loopback' }) });

    const empty = await guarded(`http://127.0.0.1:${answering.port}/none`);
    const failing = await guarded(`http://127.0.0.1:${answering.port}/busy`);

    expect([empty.status, empty.body]).toEqual([204, null]);
    expect([failing.status, failing.ok, await failing.json()]).toEqual([503, false, { error: 'no' }]);
  });
});
