/**
 * Encryption at rest on the shared dev server: a worker and a bridge sealing payloads with the AES-256-GCM
 * codec, an expectation raised through the bridge by a real A2A agent, its history read with a plain client (no
 * codec), and the bridge's codec endpoint (Temporal's codec server protocol) as the UI and the temporal CLI call it:
 * who it decodes for, its CORS, its session cookie, and what it refuses.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CODEC_SESSION_COOKIE } from '../../src/http/codec-routes.js';
import { expectationWorkflowId } from '../../core/ids.js';
import { ensureDevServer } from '../../dev/temporal/provision.js';
import { ENCRYPTED_ENCODING, KEY_ID_METADATA_KEY, EncryptionCodec } from '../../src/temporal/encryption-codec.js';
import { ExpectationSubject } from '../../workflows/search-attributes.js';
import { lapsesFor, startTestAgent, type TestAgent } from '../support/agent.js';
import { dueExpectation, expectation } from '../support/fixtures.js';
import { artifactUpdate, problem, problemBody, request, startBridgeEnv, unique } from '../support/bridge.js';
import type { Answer, BridgeEnv } from '../support/bridge.js';
import { dataText, metadataText, payloadToJson, randomKeyRing, type PayloadJson } from '../support/codec.js';
import { historyText } from '../support/history-text.js';
import { useClient } from '../support/watcher.js';

const UI_ORIGIN = 'http://temporal-ui.test:8233';
/** Two keys, the newer one current: what a ring looks like after one rotation. */
const ring = randomKeyRing(['2026-07', '2026-01'], '2026-07');
const codec = new EncryptionCodec(ring);
/** A plain client of the same server: what any operator of the namespace reads, without the keys. */
const plain = useClient();
let agent: TestAgent;
let env: BridgeEnv;
/** Raised through the bridge, with a text and a subject that appear nowhere else. */
let secret: ReturnType<typeof expectation>;
/** Its workflow input as the history holds it. */
let input: Payload;

const token = (principal: string) => env.tokens[principal]!;

function codecCall(
  operation: 'decode' | 'encode',
  body: unknown,
  init: { token?: string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  return request(`${env.url}/codec/${operation}`, {
    token: init.token,
    body,
    headers: { 'x-namespace': 'default', ...init.headers },
  });
}

beforeAll(async () => {
  agent = await startTestAgent();
  env = await startBridgeEnv(
    [
      { id: 'shipping-agent', roles: ['agent'], cardUrl: agent.cardUrl },
      { id: 'carrier-feed', roles: ['reporter'] },
      { id: 'ops-reader', roles: ['reader'] },
      { id: 'ops-admin', roles: ['admin'] },
    ],
    { name: 'codec', codec: { codec, corsOrigins: [UI_ORIGIN] } },
  );
  const id = unique();
  secret = expectation(`codec-${id}`, {
    subject: { type: 'shipment', id: `S-private-${id}` },
    expects: `The parcel reaches Ms. Confidential ${id}`,
  });
  const raised = await request(`${env.url}/a2a/events`, {
    token: token('shipping-agent'),
    body: artifactUpdate({ expectations: [secret] }, `task-codec-${id}`, `ctx-codec-${id}`),
  });
  expect(raised.body).toEqual({
    expectations: [{ expectationId: secret.expectationId, result: 'raised' }],
    facts: [],
    withdrawn: [],
  });
  const history = await plain.workflow.getHandle(expectationWorkflowId(secret.expectationId)).fetchHistory();
  input = history.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]!;
});

afterAll(async () => {
  await env?.close();
  await agent?.close();
});

const encodingOf = (payload: Payload | null | undefined) => Buffer.from(payload?.metadata?.encoding ?? []).toString();

describe('what the history holds for a reader of the namespace without the keys', () => {
  it('an encrypted workflow input: binary/encrypted under the current key id, neither subject nor text in any byte', async () => {
    const text = await historyText(plain, expectationWorkflowId(secret.expectationId));

    expect(encodingOf(input)).toBe(ENCRYPTED_ENCODING);
    expect(Buffer.from(input.metadata![KEY_ID_METADATA_KEY]!).toString()).toBe('2026-07');
    expect(Buffer.from(input.data!).includes(secret.subject.id)).toBe(false);
    expect(text).not.toContain(secret.expects);
    expect(text).not.toContain(`ctx-codec-`);
  });

  it('an encrypted memo and static summary, while the search attributes (the subject among them) stay readable', async () => {
    const workflowId = expectationWorkflowId(secret.expectationId);
    // The service itself: the plain client's describe() fails on the memo ("Unknown encoding: binary/encrypted").
    const raw = await plain.workflowService.describeWorkflowExecution({
      namespace: 'default',
      execution: { workflowId },
    });
    const started = (await plain.workflow.getHandle(workflowId).fetchHistory()).events![0]!;

    expect(encodingOf(raw.workflowExecutionInfo?.memo?.fields?.expectationId)).toBe(ENCRYPTED_ENCODING);
    expect(encodingOf(started.userMetadata?.summary)).toBe(ENCRYPTED_ENCODING);
    expect(encodingOf(started.userMetadata?.details)).toBe(ENCRYPTED_ENCODING);
    const subject = raw.workflowExecutionInfo?.searchAttributes?.indexedFields?.[ExpectationSubject.name];
    expect(defaultPayloadConverter.fromPayload(subject!)).toBe(`shipment/${secret.subject.id}`);
  });
});

describe('the bridge and the worker, which hold the keys', () => {
  it('read the record and the list (memo decoded) as without encryption', async () => {
    const record = await request(`${env.url}/v1/expectations/${secret.expectationId}`, { token: token('ops-reader') });
    const list = await request(
      `${env.url}/v1/expectations?subjectType=shipment&subjectId=${encodeURIComponent(secret.subject.id)}`,
      {
        token: token('ops-reader'),
      },
    );

    expect(record.status).toBe(200);
    expect(record.body.expectation).toMatchObject({ subject: secret.subject, expects: secret.expects });
    expect(list.status).toBe(200);
    expect(list.body.items.map((item: { expectationId: string }) => item.expectationId)).toEqual([
      secret.expectationId,
    ]);
  });

  it('deliver a lapse to the agent, its text decrypted', async () => {
    const due = dueExpectation(`codec-lapse-${unique()}`, new Date(Date.now() + 1_000), {
      expects: `Lapsing in secret ${unique()}`,
    });
    const raised = await request(`${env.url}/a2a/events`, {
      token: token('shipping-agent'),
      body: artifactUpdate({ expectations: [due] }),
    });
    expect(raised.status).toBe(200);

    await expect.poll(() => lapsesFor(agent, due.expectationId).length, { timeout: 30_000 }).toBe(1);
    const delivered = lapsesFor(agent, due.expectationId)[0]!;
    expect(JSON.stringify(delivered.message)).toContain(due.expects);
    expect(await historyText(plain, expectationWorkflowId(due.expectationId))).not.toContain(due.expects);
  });
});

describe('POST /codec/decode', () => {
  it('decodes the history input for a reader: the expectation as raised', async () => {
    const answer = await codecCall('decode', { payloads: [payloadToJson(input)] }, { token: token('ops-reader') });

    expect(answer.status).toBe(200);
    expect(answer.contentType).toMatch(/^application\/json/);
    const [decoded] = answer.body.payloads as PayloadJson[];
    expect(metadataText(decoded!, 'encoding')).toBe('json/plain');
    expect(JSON.parse(dataText(decoded!)).expectation).toMatchObject({
      subject: secret.subject,
      expects: secret.expects,
    });
  });

  it('decodes for an admin', async () => {
    const answer = await codecCall('decode', { payloads: [payloadToJson(input)] }, { token: token('ops-admin') });

    expect(answer.status).toBe(200);
    expect(dataText(answer.body.payloads[0])).toContain(secret.expects);
  });

  it('refuses without a token, or with a token that names nobody (401), and decodes nothing', async () => {
    const body = { payloads: [payloadToJson(input)] };

    const none = await codecCall('decode', body);
    const wrong = await codecCall('decode', body, { token: 'not-a-token' });

    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    expect(none.body).toEqual(
      problemBody('unauthenticated', 'the request carries no Authorization header (Bearer token)'),
    );
    expect(wrong.status).toBe(401);
    expect(wrong.body.detail).toBe('the bearer token names no principal');
  });

  it('refuses an agent and a reporter (403): they may not read what expectations carry', async () => {
    const body = { payloads: [payloadToJson(input)] };

    const asAgent = await codecCall('decode', body, { token: token('shipping-agent') });
    const asReporter = await codecCall('decode', body, { token: token('carrier-feed') });

    expect(asAgent.status).toBe(403);
    expect(asAgent.body).toEqual(
      problemBody('forbidden', "principal 'shipping-agent' may not use the codec endpoint (needs reader or admin)"),
    );
    expect(asReporter.status).toBe(403);
    expect(asReporter.body.detail).toBe(
      "principal 'carrier-feed' may not use the codec endpoint (needs reader or admin)",
    );
  });

  it('refuses another namespace than the bridge’s (403)', async () => {
    const answer = await codecCall(
      'decode',
      { payloads: [payloadToJson(input)] },
      { token: token('ops-reader'), headers: { 'x-namespace': 'payments' } },
    );

    expect(answer.status).toBe(403);
    expect(answer.body.detail).toBe("this codec endpoint serves namespace 'default', not 'payments'");
  });

  it('hands back a payload it did not encrypt exactly as it came', async () => {
    const bare = { ...payloadToJson(defaultPayloadConverter.toPayload({ hello: 'world' })), externalPayloads: [] };

    const answer = await codecCall('decode', { payloads: [bare] }, { token: token('ops-reader') });

    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ payloads: [bare] });
  });

  it('answers 422 for a payload sealed with a key it does not hold, or altered, naming why', async () => {
    const [foreign] = await new EncryptionCodec(randomKeyRing(['elsewhere'])).encode([
      defaultPayloadConverter.toPayload('x'),
    ]);
    const altered = payloadToJson(input);
    const bytes = Buffer.from(altered.data!, 'base64');
    bytes[bytes.length - 1]! ^= 0x01;
    altered.data = bytes.toString('base64');

    const unknown = await codecCall('decode', { payloads: [payloadToJson(foreign!)] }, { token: token('ops-reader') });
    const tampered = await codecCall('decode', { payloads: [altered] }, { token: token('ops-reader') });

    expect(unknown.status).toBe(422);
    expect(unknown.body).toEqual({
      type: problem('undecryptable-payload'),
      title: 'A payload cannot be decrypted',
      status: 422,
      detail:
        "a payload is encrypted with key id 'elsewhere', which is not in the key file (it holds '2026-07', '2026-01'): add that key back to decrypt it",
    });
    expect(tampered.status).toBe(422);
    expect(tampered.body.detail).toBe(
      "an encrypted payload failed authentication with key '2026-07': it was altered, or sealed with another key under that id",
    );
  });

  it('refuses a body that is not the protocol’s (400) or not JSON (415)', async () => {
    const wrong = await codecCall('decode', { payloads: [{ data: 'not base64!' }] }, { token: token('ops-reader') });
    const text = await request(`${env.url}/codec/decode`, {
      token: token('ops-reader'),
      rawBody: 'payloads',
      headers: { 'content-type': 'text/plain' },
    });

    expect(wrong.status).toBe(400);
    expect(wrong.body.errors).toEqual([{ path: 'payloads/0/data', message: 'must be base64' }]);
    expect(text.status).toBe(415);
  });
});

describe('POST /codec/encode', () => {
  it('seals with the current key what decode then opens', async () => {
    const original = payloadToJson(defaultPayloadConverter.toPayload({ signal: 'from the UI' }));

    const encoded = await codecCall('encode', { payloads: [original] }, { token: token('ops-admin') });
    const decoded = await codecCall('decode', encoded.body, { token: token('ops-admin') });

    expect(encoded.status).toBe(200);
    expect(metadataText(encoded.body.payloads[0], 'encoding')).toBe(ENCRYPTED_ENCODING);
    expect(metadataText(encoded.body.payloads[0], KEY_ID_METADATA_KEY)).toBe('2026-07');
    expect(decoded.body).toEqual({ payloads: [original] });
  });

  it('refuses without a token (401)', async () => {
    const answer = await codecCall('encode', { payloads: [] });

    expect(answer.status).toBe(401);
  });
});

describe('CORS for the Temporal UI', () => {
  const preflight = (origin: string) =>
    fetch(`${env.url}/codec/decode`, {
      method: 'OPTIONS',
      headers: {
        origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization,content-type,x-namespace',
      },
    });

  it('answers the preflight of the configured origin: POST, the UI’s headers, credentials', async () => {
    const answer = await preflight(UI_ORIGIN);

    expect(answer.status).toBe(204);
    expect(answer.headers.get('access-control-allow-origin')).toBe(UI_ORIGIN);
    expect(answer.headers.get('access-control-allow-credentials')).toBe('true');
    expect(answer.headers.get('access-control-allow-methods')).toBe('POST');
    expect(answer.headers.get('access-control-allow-headers')?.split(', ')).toEqual(
      expect.arrayContaining(['Authorization', 'Content-Type', 'X-Namespace']),
    );
    expect(answer.headers.get('vary')).toContain('Origin');
  });

  it('refuses the preflight of any other origin, without a CORS header', async () => {
    const answer = await preflight('http://evil.test:8233');

    expect(answer.status).toBe(403);
    expect(answer.headers.get('access-control-allow-origin')).toBeNull();
    expect(((await answer.json()) as { detail: string }).detail).toBe(
      `origin 'http://evil.test:8233' may not call the codec endpoint (WATCHER_CODEC_CORS_ORIGINS allows ${UI_ORIGIN})`,
    );
  });

  it('lets the configured origin read a decode, and refuses another origin even with a reader’s token', async () => {
    const body = { payloads: [payloadToJson(input)] };

    const allowed = await codecCall('decode', body, { token: token('ops-reader'), headers: { origin: UI_ORIGIN } });
    const other = await codecCall('decode', body, {
      token: token('ops-reader'),
      headers: { origin: 'http://evil.test:8233' },
    });

    expect(allowed.status).toBe(200);
    expect(allowed.headers.get('access-control-allow-origin')).toBe(UI_ORIGIN);
    expect(other.status).toBe(403);
    expect(JSON.stringify(other.body)).not.toContain(secret.expects);
  });
});

describe('the browser session (/codec/login)', () => {
  const login = (tokenValue: string) =>
    fetch(`${env.url}/codec/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: tokenValue }).toString(),
    });

  it('serves a sign-in form', async () => {
    const answer = await fetch(`${env.url}/codec/login`);

    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await answer.text()).toContain('<input type="password" name="token"');
  });

  it('keeps a reader’s token in an HttpOnly cookie for the codec paths, which then decodes from the UI’s origin', async () => {
    const signedIn = await login(token('ops-reader'));
    const cookie = signedIn.headers.get('set-cookie') ?? '';
    const session = cookie.split(';')[0]!;

    const decoded = await codecCall(
      'decode',
      { payloads: [payloadToJson(input)] },
      { headers: { cookie: session, origin: UI_ORIGIN } },
    );

    expect(signedIn.status).toBe(200);
    expect(await signedIn.text()).toContain('<strong id="principal">ops-reader</strong>');
    expect(session).toBe(`${CODEC_SESSION_COOKIE}=${encodeURIComponent(token('ops-reader'))}`);
    expect(cookie).toMatch(/; Path=\/codec(;|$)/);
    expect(cookie).toMatch(/; HttpOnly(;|$)/);
    expect(cookie).toMatch(/; SameSite=Strict(;|$)/);
    expect(decoded.status).toBe(200);
    expect(decoded.headers.get('access-control-allow-credentials')).toBe('true');
    expect(dataText(decoded.body.payloads[0])).toContain(secret.expects);
  });

  it('sets no cookie for an agent (403) or an unknown token (401)', async () => {
    const asAgent = await login(token('shipping-agent'));
    const unknown = await login('not-a-token');

    expect(asAgent.status).toBe(403);
    expect(asAgent.headers.get('set-cookie')).toBeNull();
    expect(unknown.status).toBe(401);
    expect(unknown.headers.get('set-cookie')).toBeNull();
  });

  it('refuses a session cookie that names nobody, and one that names an agent', async () => {
    const stale = await codecCall('decode', { payloads: [] }, { headers: { cookie: `${CODEC_SESSION_COOKIE}=gone` } });
    const agentCookie = `${CODEC_SESSION_COOKIE}=${encodeURIComponent(token('shipping-agent'))}`;
    const asAgent = await codecCall('decode', { payloads: [] }, { headers: { cookie: agentCookie } });

    expect(stale.status).toBe(401);
    expect(stale.body.detail).toBe('the codec session names no principal any more: sign in again at /codec/login');
    expect(asAgent.status).toBe(403);
  });

  it('signs out: the cookie is cleared', async () => {
    const answer = await fetch(`${env.url}/codec/logout`, { method: 'POST' });

    expect(answer.status).toBe(204);
    expect(answer.headers.get('set-cookie')).toMatch(
      new RegExp(`^${CODEC_SESSION_COOKIE}=; Path=/codec; Expires=Thu, 01 Jan 1970`),
    );
  });
});

describe('the temporal CLI', () => {
  const cli = ensureDevServer();
  const show = async (...codecArgs: string[]) => {
    if (cli.type !== 'existing-path') throw new Error('no temporal CLI');
    const args = ['workflow', 'show', '--address', inject('temporalAddress'), '--namespace', 'default'];
    args.push('--workflow-id', expectationWorkflowId(secret.expectationId), '--output', 'json', ...codecArgs);
    const { stdout } = await promisify(execFile)(cli.path, args, { maxBuffer: 16 * 1024 * 1024 });
    // The history as protobuf JSON: the input's metadata and data in base64.
    const history = JSON.parse(stdout) as {
      events: { workflowExecutionStartedEventAttributes?: { input: { payloads: PayloadJson[] } } }[];
    };
    return history.events[0]!.workflowExecutionStartedEventAttributes!.input.payloads[0]!;
  };

  it('shows the input decoded with --codec-endpoint and a reader’s --codec-auth, and sealed without them', async () => {
    const decoded = await show('--codec-endpoint', `${env.url}/codec`, '--codec-auth', `Bearer ${token('ops-reader')}`);
    const sealed = await show();

    expect(metadataText(decoded, 'encoding')).toBe('json/plain');
    expect(JSON.parse(dataText(decoded)).expectation).toMatchObject({
      subject: secret.subject,
      expects: secret.expects,
    });
    expect(metadataText(sealed, 'encoding')).toBe(ENCRYPTED_ENCODING);
    expect(dataText(sealed)).not.toContain(secret.expects);
  });

  it('decodes nothing with an agent’s --codec-auth', async () => {
    const refused = show(
      '--codec-endpoint',
      `${env.url}/codec`,
      '--codec-auth',
      `Bearer ${token('shipping-agent')}`,
      '--command-timeout',
      '3s',
    );

    // The CLI retries a refused codec call until its deadline, then prints no history at all.
    await expect(refused).rejects.toMatchObject({
      stdout: '',
      message: expect.stringContaining('failed getting next history event'),
    });
  });
});
