import { describe, expect, it } from 'vitest';
import { watcherAgentCard, watcherAgentCardJson } from '../../../../src/a2a/agent-endpoint.js';
import {
  createCardResolver,
  lapseSkillOf,
  parseAgentCard,
  type AgentCardInfo,
} from '../../../../activities/agent-card/card.js';
import { loadConfig } from '../../../../src/config.js';
import { createGuardedFetch } from '../../../../activities/outbound/guarded-fetch.js';
import { checkDeclaration, checkKind, isPlaceholder, PLACEHOLDER_WORDS } from '../../../../src/service/card-rules.js';
import { CardUnreachableError } from '../../../../activities/agent-card/errors.js';
import { EXTENSION_URI } from '../../../../core/schemas/extension.js';
import { cardInfo, shipmentDelivery } from '../../../support/fixtures.js';

const params = {
  keepsTime: false,
  lapseSkill: 'handle-lapse',
  kinds: [{ kind: 'delivery', subjectType: 'shipment', basis: 'contract', describes: 'The shipment is delivered' }],
};

const v1Card = {
  name: 'Shipping agent',
  description: 'd',
  supportedInterfaces: [
    { url: 'http://127.0.0.1:1/a2a', protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
  ],
  version: '1.0.0',
  capabilities: {
    streaming: false,
    extensions: [
      { uri: 'https://example.com/other', description: '', required: false },
      { uri: EXTENSION_URI, description: 'keeps time', required: false, params },
    ],
  },
  securitySchemes: {},
  securityRequirements: [],
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [{ id: 'handle-lapse', name: 'Handle lapse', description: '', tags: [], examples: [] }],
  signatures: [],
};

const v03Card = {
  protocolVersion: '0.3.0',
  name: 'Shipping agent',
  description: 'd',
  url: 'http://127.0.0.1:1/a2a',
  preferredTransport: 'JSONRPC',
  version: '1.0.0',
  capabilities: { extensions: [{ uri: EXTENSION_URI, params }] },
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [{ id: 'handle-lapse', name: 'Handle lapse', description: '', tags: [] }],
};

const expectation = shipmentDelivery('e1', 'S-1', '2026-12-01T00:00:00Z', {
  expects: 'delivered',
  satisfiedBy: { factKey: 'k' },
});

const withParams = (p: unknown): AgentCardInfo => cardInfo(p);

describe('parseAgentCard', () => {
  it.each([
    ['reads a v1.0 card: version, skills and the declaration with its index', v1Card, '1.0', 1],
    ['reads a v0.3 card', v03Card, '0.3', 0],
  ])('%s', (_title, served, version, index) => {
    expect(parseAgentCard(served)).toEqual({
      version,
      skillIds: ['handle-lapse'],
      declaration: { index, params },
      securitySchemes: {},
      securityRequirements: [],
    });
  });

  it('reads a card that does not declare the extension', () => {
    expect(parseAgentCard({ ...v1Card, capabilities: {} }).declaration).toBeUndefined();
  });

  it("skips another extension's entry it cannot read, and finds ours at its index as the card lists it", () => {
    const unreadable = [
      'a string',
      null,
      42,
      { description: 'no uri' },
      { uri: 7, params: {} },
      { uri: 'https://x', params: 'odd' },
    ];
    const card = { ...v1Card, capabilities: { extensions: [...unreadable, { uri: EXTENSION_URI, params }] } };

    expect(parseAgentCard(card).declaration).toEqual({ index: 6, params });
  });

  it('reads a card whose extensions are not a list as one that does not declare the extension', () => {
    const card = parseAgentCard({ ...v1Card, capabilities: { extensions: { uri: EXTENSION_URI, params } } });

    expect(card.declaration).toBeUndefined();
    expect(card.skillIds).toEqual(['handle-lapse']);
  });

  it('refuses something that is not a card as unreachable (502)', () => {
    expect(() => parseAgentCard({ skills: 'none' }, 'http://x/card')).toThrow(CardUnreachableError);
  });
});

describe('parseAgentCard: security schemes', () => {
  /** The same five schemes in each form cards are served in. */
  const read = {
    bearer: { type: 'http', scheme: 'Bearer', bearerFormat: 'opaque', description: 'a principal token' },
    key: { type: 'apiKey', location: 'header', name: 'X-API-Key' },
    oauth: { type: 'oauth2', oauth2MetadataUrl: 'https://auth.example/.well-known/oauth-authorization-server' },
    oidc: { type: 'openIdConnect', openIdConnectUrl: 'https://auth.example/.well-known/openid-configuration' },
    mtls: { type: 'mutualTLS', description: 'client certificate' },
  };

  it('reads the A2A v1.0 ProtoJSON form (the oneof member as the field name) and its requirements', () => {
    const card = {
      ...v1Card,
      securitySchemes: {
        bearer: {
          httpAuthSecurityScheme: { scheme: 'Bearer', bearerFormat: 'opaque', description: 'a principal token' },
        },
        key: { apiKeySecurityScheme: { location: 'header', name: 'X-API-Key' } },
        oauth: {
          oauth2SecurityScheme: {
            flows: { clientCredentials: { tokenUrl: 'https://auth.example/token', scopes: { read: 'read' } } },
            oauth2MetadataUrl: 'https://auth.example/.well-known/oauth-authorization-server',
          },
        },
        oidc: {
          openIdConnectSecurityScheme: { openIdConnectUrl: 'https://auth.example/.well-known/openid-configuration' },
        },
        mtls: { mtlsSecurityScheme: { description: 'client certificate' } },
      },
      securityRequirements: [
        { schemes: { bearer: {} } },
        { schemes: { oauth: { list: ['read'] }, mtls: { list: [] } } },
      ],
    };

    const info = parseAgentCard(card);

    expect(info.securitySchemes).toEqual(read);
    expect(info.securityRequirements).toEqual([{ bearer: [] }, { oauth: ['read'], mtls: [] }]);
  });

  it('reads the proto field names ProtoJSON parsers accept too', () => {
    const card = { ...v1Card, securitySchemes: { bearer: { http_auth_security_scheme: { scheme: 'Bearer' } } } };

    expect(parseAgentCard(card).securitySchemes).toEqual({ bearer: { type: 'http', scheme: 'Bearer' } });
  });

  it('reads the in-memory form @a2a-js/sdk 1.3 card handlers serve ({$case, value}, empty strings kept)', () => {
    const card = {
      ...v1Card,
      securitySchemes: {
        bearer: {
          scheme: {
            $case: 'httpAuthSecurityScheme',
            value: { description: 'a principal token', scheme: 'Bearer', bearerFormat: 'opaque' },
          },
        },
        key: {
          scheme: { $case: 'apiKeySecurityScheme', value: { description: '', location: 'header', name: 'X-API-Key' } },
        },
        mtls: { scheme: { $case: 'mtlsSecurityScheme', value: { description: 'client certificate' } } },
      },
      securityRequirements: [{ schemes: { bearer: { list: [] } } }],
    };

    const info = parseAgentCard(card);

    expect(info.securitySchemes).toEqual({ bearer: read.bearer, key: read.key, mtls: read.mtls });
    expect(info.securityRequirements).toEqual([{ bearer: [] }]);
  });

  it('reads the v0.3 form (OpenAPI `type`, `in` for the API key) and `security`', () => {
    const card = {
      ...v03Card,
      securitySchemes: {
        bearer: { type: 'http', scheme: 'Bearer', bearerFormat: 'opaque', description: 'a principal token' },
        key: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
        oidc: { type: 'openIdConnect', openIdConnectUrl: read.oidc.openIdConnectUrl },
        mtls: { type: 'mutualTLS', description: 'client certificate' },
      },
      security: [{ bearer: [] }, { oidc: ['openid', 'email'] }],
    };

    const info = parseAgentCard(card);

    expect(info.securitySchemes).toEqual({ bearer: read.bearer, key: read.key, oidc: read.oidc, mtls: read.mtls });
    expect(info.securityRequirements).toEqual([{ bearer: [] }, { oidc: ['openid', 'email'] }]);
  });

  it('reads a scheme it cannot make out as unrecognized, and the rest of the card still', () => {
    const card = {
      ...v1Card,
      securitySchemes: {
        twoMembers: { httpAuthSecurityScheme: { scheme: 'Bearer' }, mtlsSecurityScheme: {} },
        noScheme: { httpAuthSecurityScheme: { bearerFormat: 'JWT' } },
        future: { quantumSecurityScheme: {} },
        notAnObject: 'bearer',
      },
      securityRequirements: 'everyone',
    };

    const info = parseAgentCard(card);

    expect(info.securitySchemes).toEqual({
      twoMembers: { type: 'unrecognized' },
      noScheme: { type: 'unrecognized' },
      future: { type: 'unrecognized' },
      notAnObject: { type: 'unrecognized' },
    });
    expect(info.securityRequirements).toEqual([]);
    expect(info.declaration).toEqual({ index: 1, params });
  });

  it("reads the watcher's own card as served (ProtoJSON) and as the SDK holds it alike", () => {
    const bearer = {
      type: 'http',
      scheme: 'Bearer',
      description: 'The bearer token of a principal (agent or reporter).',
    };

    for (const card of [watcherAgentCardJson('http://watcher:3000'), watcherAgentCard('http://watcher:3000')]) {
      const info = parseAgentCard(JSON.parse(JSON.stringify(card)));
      expect(info.securitySchemes).toEqual({ bearer });
      expect(info.securityRequirements).toEqual([{ bearer: [] }]);
    }
  });
});

describe('createCardResolver', () => {
  const serving = (body: string, status = 200) => {
    const calls: { url: string; headers: Record<string, string> }[] = [];
    const fetchFn = (async (url: string, init?: RequestInit) => {
      calls.push({ url, headers: init?.headers as Record<string, string> });
      return new Response(body, { status, headers: { 'content-type': 'application/json' } });
    }) as typeof fetch;
    return { calls, fetchFn };
  };

  it('fetches with the principal authorization and caches for cacheSeconds', async () => {
    let clock = 0;
    const { calls, fetchFn } = serving(JSON.stringify(v1Card));
    const resolver = createCardResolver({ fetch: fetchFn, cacheSeconds: 60, now: () => clock });
    const agent = { cardUrl: 'http://agent/card', authorization: 'Bearer t' };

    await resolver.resolve(agent);
    clock = 59_000;
    await resolver.resolve(agent);
    clock = 60_000;
    await resolver.resolve(agent);

    expect(calls.map((c) => [c.url, c.headers.authorization])).toEqual([
      ['http://agent/card', 'Bearer t'],
      ['http://agent/card', 'Bearer t'],
    ]);
  });

  it('reports an HTTP error as unreachable', async () => {
    const { fetchFn } = serving('{}', 500);
    const resolver = createCardResolver({ fetch: fetchFn, cacheSeconds: 0 });

    await expect(resolver.resolve({ cardUrl: 'http://agent/card' })).rejects.toThrow(
      new CardUnreachableError('the agent card at http://agent/card answered HTTP 500', 'http', 500),
    );
    await expect(resolver.resolve({ cardUrl: 'http://agent/card' })).rejects.toMatchObject({
      reason: 'http',
      status: 500,
    });
  });

  it('reports a body that is not JSON as unreachable, without quoting it', async () => {
    const { fetchFn } = serving('<html>internal admin page</html>');
    const resolver = createCardResolver({ fetch: fetchFn, cacheSeconds: 0 });

    await expect(resolver.resolve({ cardUrl: 'http://agent/card' })).rejects.toBeInstanceOf(CardUnreachableError);
    await expect(resolver.resolve({ cardUrl: 'http://agent/card' })).rejects.toMatchObject({
      reason: 'not-json',
      message: 'the agent card at http://agent/card is not JSON',
    });
  });

  it('reads at most maxBytes of a card, whatever fetch served it', async () => {
    const { fetchFn } = serving(JSON.stringify({ ...v1Card, description: 'x'.repeat(5_000) }));
    const resolver = createCardResolver({ fetch: fetchFn, cacheSeconds: 0, maxBytes: 4_096 });

    await expect(resolver.read({ cardUrl: 'http://agent/card' })).rejects.toMatchObject({
      reason: 'too-large',
      message:
        'the agent card: the answer of http://agent/card is over the 4096-byte cap: the watcher stopped reading it',
    });
  });

  it('reports JSON that is not a card as unreachable', async () => {
    const { fetchFn } = serving('{"skills": "none"}');
    const resolver = createCardResolver({ fetch: fetchFn, cacheSeconds: 0 });

    await expect(resolver.read({ cardUrl: 'http://agent/card' })).rejects.toMatchObject({
      name: 'CardUnreachableError',
      reason: 'not-a-card',
    });
  });

  it('reports a connection refused as unreachable', async () => {
    const loopback = loadConfig({ TEMPORAL_ADDRESS: 'temporal:7233', WATCHER_OUTBOUND_ALLOW: 'loopback' }).outbound;
    const resolver = createCardResolver({ cacheSeconds: 0, fetch: createGuardedFetch({ rules: loopback }) });

    await expect(resolver.resolve({ cardUrl: 'http://127.0.0.1:1/card' })).rejects.toBeInstanceOf(CardUnreachableError);
    await expect(resolver.resolve({ cardUrl: 'http://127.0.0.1:1/card' })).rejects.toMatchObject({ reason: 'network' });
  });

  it('fetches through the guarded fetch by default: a card on loopback is refused without a connection', async () => {
    const resolver = createCardResolver({ cacheSeconds: 0 });

    await expect(resolver.read({ cardUrl: 'http://127.0.0.1:1/card' })).rejects.toMatchObject({
      name: 'CardUnreachableError',
      reason: 'denied-address',
      message:
        'the agent card: http://127.0.0.1:1 is outside the outbound address policy (WATCHER_OUTBOUND_ALLOW, WATCHER_OUTBOUND_DENY): nothing was sent',
    });
  });

  it('gives up on a card that does not answer, at its own timeout or at the caller’s signal', async () => {
    const hanging = ((_url: string, init?: RequestInit) =>
      new Promise((_resolve, reject) =>
        init?.signal?.addEventListener('abort', () => reject(init.signal?.reason)),
      )) as typeof fetch;
    const resolver = createCardResolver({ fetch: hanging, cacheSeconds: 0, timeoutMs: 50 });
    const patient = createCardResolver({ fetch: hanging, cacheSeconds: 0, timeoutMs: 60_000 });

    await expect(resolver.read({ cardUrl: 'http://agent/card' })).rejects.toMatchObject({ reason: 'timeout' });
    await expect(
      patient.read({ cardUrl: 'http://agent/card' }, { signal: AbortSignal.timeout(50) }),
    ).rejects.toMatchObject({
      reason: 'timeout',
      message: 'the agent card at http://agent/card did not answer in time',
    });
  });

  it('asks for the v1.0 card and answers its JSON as served, with what it reads of it', async () => {
    const { calls, fetchFn } = serving(JSON.stringify(v1Card));
    const resolver = createCardResolver({ fetch: fetchFn, cacheSeconds: 0 });

    const read = await resolver.read({ cardUrl: 'http://agent/card' });

    expect(calls[0]?.headers['A2A-Version']).toBe('1.0');
    expect(read.json).toEqual(v1Card);
    expect(read.info).toEqual(parseAgentCard(v1Card));
  });

  it('serves concurrent reads of one card with one fetch', async () => {
    const { calls, fetchFn } = serving(JSON.stringify(v1Card));
    const resolver = createCardResolver({ fetch: fetchFn, cacheSeconds: 60 });
    const agent = { cardUrl: 'http://agent/card' };

    const reads = await Promise.all([resolver.read(agent), resolver.read(agent), resolver.resolve(agent)]);

    expect(calls).toHaveLength(1);
    expect(reads[2]).toEqual(reads[0]!.info);
  });

  it('does not cache a failed read, and reads again a card it was told to forget', async () => {
    let status = 503;
    const calls: string[] = [];
    const fetchFn = (async (url: string) => {
      calls.push(url);
      return new Response(JSON.stringify(v1Card), { status });
    }) as typeof fetch;
    const resolver = createCardResolver({ fetch: fetchFn, cacheSeconds: 60, now: () => 0 });
    const agent = { cardUrl: 'http://agent/card' };

    await expect(resolver.read(agent)).rejects.toMatchObject({ status: 503 });
    status = 200;
    await resolver.read(agent);
    await resolver.read(agent);
    resolver.forget(agent);
    await resolver.read(agent);

    // the failure, the read after it (then cached), the read after forget
    expect(calls).toHaveLength(3);
  });
});

describe('checkDeclaration', () => {
  it('accepts a complete declaration whose lapseSkill is on the card', () => {
    expect(checkDeclaration(withParams(params))).toEqual({
      ok: true,
      params,
      base: ['card', 'capabilities', 'extensions', 0, 'params'],
    });
  });

  it('names the missing declaration', () => {
    expect(checkDeclaration({ ...withParams(params), skillIds: [], declaration: undefined })).toEqual({
      ok: false,
      errors: [
        {
          path: 'card/capabilities/extensions',
          rule: 'extension-declared',
          message: `the agent's card does not declare the extension ${EXTENSION_URI} in capabilities.extensions`,
        },
      ],
    });
  });

  it('names a declaration without keepsTime by its path in the card', () => {
    const { keepsTime: _k, ...rest } = params;

    expect(checkDeclaration(withParams(rest))).toMatchObject({
      ok: false,
      errors: [{ path: 'card/capabilities/extensions/0/params/keepsTime', rule: 'declaration-params' }],
    });
  });

  it('names a lapseSkill that is not a skill on the card', () => {
    expect(checkDeclaration(withParams({ ...params, lapseSkill: 'nap' }))).toEqual({
      ok: false,
      errors: [
        {
          path: 'card/capabilities/extensions/0/params/lapseSkill',
          rule: 'lapse-skill',
          message: "lapseSkill 'nap' names no skill on the card (skills: handle-lapse)",
        },
      ],
    });
  });
});

describe('checkDeclaration: every kind alike', () => {
  const delivery = params.kinds[0]!;
  const kindsOf = (...kinds: object[]) => withParams({ ...params, kinds });

  it('refuses a kind declared twice, naming the second by its path', () => {
    const card = kindsOf(delivery, { ...delivery, describes: 'Another reading' });

    expect(checkDeclaration(card)).toEqual({
      ok: false,
      errors: [
        {
          path: 'card/capabilities/extensions/0/params/kinds/1/kind',
          rule: 'kind-unique',
          message: "kind 'delivery' is declared twice (kinds/0 and kinds/1); a kind is unique within one declaration",
        },
      ],
    });
  });

  it('refuses an empty and a placeholder describes alike, on any kind, with one rule', () => {
    const card = kindsOf(
      delivery,
      { ...delivery, kind: 'pickup', describes: '' },
      { ...delivery, kind: 'transit', describes: ' TBD ' },
    );

    expect(checkDeclaration(card)).toEqual({
      ok: false,
      errors: [
        {
          path: 'card/capabilities/extensions/0/params/kinds/1/describes',
          rule: 'describes-placeholder',
          message: "the card's kind 'pickup' has an empty describes; say what is expected",
        },
        {
          path: 'card/capabilities/extensions/0/params/kinds/2/describes',
          rule: 'describes-placeholder',
          message: "the card's kind 'transit' has a placeholder describes (' TBD '); say what is expected",
        },
      ],
    });
  });

  it("refuses a kind's skill that is not a skill on the card, and accepts those that are", () => {
    const card = {
      ...kindsOf({ ...delivery, skills: ['quote', 'ship', 'handle-lapse'] }),
      skillIds: ['handle-lapse', 'ship'],
    };

    expect(checkDeclaration(card)).toEqual({
      ok: false,
      errors: [
        {
          path: 'card/capabilities/extensions/0/params/kinds/0/skills/0',
          rule: 'kind-skills',
          message:
            "the card's kind 'delivery' names skill 'quote', which is not a skill on the card (skills: handle-lapse, ship)",
        },
      ],
    });
    expect(checkDeclaration({ ...card, skillIds: ['handle-lapse', 'ship', 'quote'] })).toMatchObject({ ok: true });
  });

  it('names every broken rule of the declaration at once, lapseSkill first, then kind by kind', () => {
    const card = { ...kindsOf({ ...delivery, describes: 'TODO', skills: ['quote'] }, delivery), skillIds: [] };
    const param = (field: string) => `card/capabilities/extensions/0/params/${field}`;

    expect(checkDeclaration(card)).toMatchObject({
      ok: false,
      errors: [
        { path: param('lapseSkill'), rule: 'lapse-skill' },
        { path: param('kinds/0/describes'), rule: 'describes-placeholder' },
        { path: param('kinds/0/skills/0'), rule: 'kind-skills' },
        { path: param('kinds/1/kind'), rule: 'kind-unique' },
      ],
    });
  });
});

describe('lapseSkillOf', () => {
  it("answers the declaration's lapseSkill when it names a skill on the card", () => {
    expect(lapseSkillOf(withParams(params))).toBe('handle-lapse');
  });

  it('answers nothing when the card no longer has that skill, or declares no lapseSkill', () => {
    expect(lapseSkillOf({ ...withParams(params), skillIds: ['other'] })).toBeUndefined();
    expect(lapseSkillOf(withParams({ ...params, lapseSkill: 7 }))).toBeUndefined();
    expect(lapseSkillOf({ ...withParams(params), declaration: undefined })).toBeUndefined();
  });
});

describe('checkKind', () => {
  const declared = (p = params) => ({ params: p, base: ['card', 'capabilities', 'extensions', 0, 'params'] });

  it('accepts a declared kind with the declared basis', () => {
    expect(checkKind(declared(), expectation, ['expectations', 0])).toEqual({ errors: [], warnings: [] });
  });

  it('names an undeclared kind', () => {
    expect(checkKind(declared(), { ...expectation, kind: 'pickup' }, ['expectations', 0]).errors).toEqual([
      {
        path: 'expectations/0/kind',
        rule: 'kind-declared',
        message: "kind 'pickup' is not declared on the agent's card (declared: delivery)",
      },
    ]);
  });

  it('names a basis other than the declared one', () => {
    expect(checkKind(declared(), { ...expectation, basis: 'observed' }, ['e', 0]).errors).toMatchObject([
      { path: 'e/0/basis', rule: 'basis' },
    ]);
  });

  it('only warns when subject.type differs from the kind subjectType', () => {
    const result = checkKind(declared(), { ...expectation, subject: { type: 'parcel', id: 'P' } }, ['e', 0]);

    expect(result).toEqual({
      errors: [],
      warnings: [
        {
          path: 'e/0/subject/type',
          message: "subject.type 'parcel' differs from the subjectType 'shipment' declared for kind 'delivery'",
        },
      ],
    });
  });
});

describe('isPlaceholder', () => {
  it.each(PLACEHOLDER_WORDS)('the word %j is a placeholder, in any case and trimmed', (word) => {
    expect(isPlaceholder(word)).toBe(true);
    expect(isPlaceholder(` ${word.toUpperCase()} `)).toBe(true);
    expect(isPlaceholder(`${word}.`)).toBe(true);
  });

  it.each(['', '  ', ' ... ', '…', '-', '---', '?', '*', '— –'])('%j has no letter or digit: a placeholder', (text) => {
    expect(isPlaceholder(text)).toBe(true);
  });

  it.each(['x', 'xxx', 'XXXX', 'aaaaaa', '000'])('%j repeats one character: a placeholder', (text) => {
    expect(isPlaceholder(text)).toBe(true);
  });

  it.each(['lorem ipsum', 'Lorem ipsum dolor sit amet', '<describe the kind>', '{{describes}}', '${DESCRIBES}'])(
    '%j is filler or an unfilled slot: a placeholder',
    (text) => {
      expect(isPlaceholder(text)).toBe(true);
    },
  );

  it.each([
    'The shipment is delivered',
    'TODO: later',
    'tbd by the carrier',
    'N/A items are returned',
    'ok',
    'Paid',
    'x-ray taken',
    '<b>The invoice is paid</b>',
    'Delivery (3–5 days)',
  ])('%j is not', (text) => {
    expect(isPlaceholder(text)).toBe(false);
  });
});
