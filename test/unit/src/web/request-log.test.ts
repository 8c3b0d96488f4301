/**
 * The bridge's request log: one JSON line per answered request, naming the expectation (and its workflow) it was
 * about, so an operator can go from the log to the Temporal UI.
 */
import { Writable } from 'node:stream';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { requestLog } from '../../../../src/web/request-log.js';

const lines: Record<string, any>[] = [];
const sink = new Writable({
  write(chunk: Buffer, _encoding, done) {
    lines.push(JSON.parse(chunk.toString()));
    done();
  },
});
const closers: (() => void)[] = [];
afterEach(() => {
  lines.length = 0;
  closers.splice(0).forEach((close) => close());
});

/** An app with the request log in front of `routes`, listening on a random port. */
async function serve(routes: (app: express.Express) => void): Promise<string> {
  const app = express();
  app.use(requestLog(pino({ level: 'debug' }, sink)));
  routes(app);
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  closers.push(() => server.close());
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** The log line of the one request made, once written. */
async function logged(): Promise<Record<string, any>> {
  await expect.poll(() => lines.length).toBe(1);
  return lines[0]!;
}

describe('requestLog', () => {
  it('names the expectation and its workflow for a request about one expectation', async () => {
    const url = await serve((app) => app.get('/v1/expectations/:id', (_req, res) => void res.json({})));

    await fetch(`${url}/v1/expectations/EXP%2042`);

    expect(await logged()).toMatchObject({
      level: 30,
      msg: 'request',
      method: 'GET',
      path: '/v1/expectations/EXP%2042',
      status: 200,
      expectationId: 'EXP 42',
      workflowId: 'expectation:EXP 42',
    });
  });

  it('names the expectation of a lapse resend', async () => {
    const url = await serve((app) =>
      app.post('/v1/expectations/:id/lapses/:messageId/resend', (_req, res) => void res.json({})),
    );

    await fetch(`${url}/v1/expectations/EXP-7/lapses/b40ef0bc-0853-5c12-80e1-05dd5a8e6ef8/resend`, { method: 'POST' });

    expect(await logged()).toMatchObject({ method: 'POST', expectationId: 'EXP-7', workflowId: 'expectation:EXP-7' });
  });

  it('names every expectation of a per-item answer', async () => {
    const url = await serve((app) =>
      app.post(
        '/a2a/events',
        (_req, res) =>
          void res.json({
            expectations: [
              { expectationId: 'e1', result: 'raised' },
              { expectationId: 'e2', result: 'unchanged' },
            ],
          }),
      ),
    );

    await fetch(`${url}/a2a/events`, { method: 'POST' });

    expect(await logged()).toMatchObject({
      expectationIds: ['e1', 'e2'],
      workflowIds: ['expectation:e1', 'expectation:e2'],
    });
  });

  it('logs a client error at warn with its status', async () => {
    const url = await serve((app) => app.get('/v1/expectations/:id', (_req, res) => void res.status(404).json({})));

    await fetch(`${url}/v1/expectations/nope`);

    expect(await logged()).toMatchObject({ level: 40, status: 404, expectationId: 'nope' });
  });

  it('logs a successful probe at debug only', async () => {
    const url = await serve((app) => app.get('/healthz', (_req, res) => void res.json({ status: 'ok' })));

    await fetch(`${url}/healthz`);

    expect(await logged()).toMatchObject({ level: 20, path: '/healthz', status: 200 });
  });
});
