import { describe, expect, it } from 'vitest';
import { createCardResolver, parseAgentCard, type AgentCardInfo } from '../../src/a2a/card.js';
import { checkDeclaration, checkKind, isPlaceholder } from '../../src/service/card-rules.js';
import { CardUnreachableError } from '../../src/service/errors.js';
import { EXTENSION_URI, type Expectation } from '../../src/schemas/extension.js';

const params = {
  keepsTime: false,
  lapseSkill: 'handle-lapse',
  kinds: [{ kind: 'delivery', subjectType: 'shipment', basis: 'contract', describes: 'The shipment is delivered' }],
};

const v1Card = {
  name: 'Shipping agent',
  description: 'd',
  supportedInterfaces: [{ url: 'http://127.0.0.1:1/a2a', protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
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

const expectation: Expectation = {
  expectationId: 'e1',
  kind: 'delivery',
  subject: { type: 'shipment', id: 'S-1' },
  expects: 'delivered',
  satisfiedBy: { factKey: 'k' },
  dueAt: '2026-12-01T00:00:00Z',
  basis: 'contract',
};

const withParams = (p: unknown): AgentCardInfo => ({
  version: '1.0',
  skillIds: ['handle-lapse'],
  declaration: { index: 0, params: p },
});

describe('parseAgentCard', () => {
  it('reads a v1.0 card: version, skills and the declaration with its index', () => {
    expect(parseAgentCard(v1Card)).toEqual({ version: '1.0', skillIds: ['handle-lapse'], declaration: { index: 1, params } });
  });

  it('reads a v0.3 card', () => {
    expect(parseAgentCard(v03Card)).toEqual({ version: '0.3', skillIds: ['handle-lapse'], declaration: { index: 0, params } });
  });

  it('reads a card that does not declare the extension', () => {
    expect(parseAgentCard({ ...v1Card, capabilities: {} }).declaration).toBeUndefined();
  });

  it('refuses something that is not a card as unreachable (502)', () => {
    expect(() => parseAgentCard({ skills: 'none' }, 'http://x/card')).toThrow(CardUnreachableError);
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
      new CardUnreachableError('the agent card at http://agent/card answered HTTP 500'),
    );
  });

  it('reports a body that is not JSON as unreachable', async () => {
    const { fetchFn } = serving('<html>');
    const resolver = createCardResolver({ fetch: fetchFn, cacheSeconds: 0 });

    await expect(resolver.resolve({ cardUrl: 'http://agent/card' })).rejects.toBeInstanceOf(CardUnreachableError);
  });

  it('reports a connection refused as unreachable', async () => {
    const resolver = createCardResolver({ cacheSeconds: 0 });

    await expect(resolver.resolve({ cardUrl: 'http://127.0.0.1:1/card' })).rejects.toBeInstanceOf(CardUnreachableError);
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
    expect(checkDeclaration({ version: '1.0', skillIds: [] })).toEqual({
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

  it("names the card's placeholder describes", () => {
    const placeholder = { ...params, kinds: [{ ...params.kinds[0]!, describes: ' TBD ' }] };

    expect(checkKind(declared(placeholder), expectation, ['e', 0]).errors).toMatchObject([
      { path: 'card/capabilities/extensions/0/params/kinds/0/describes', rule: 'describes-placeholder' },
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
  it.each(['', '  ', 'TODO', 'tbd', ' ... ', 'Placeholder', '…'])('%j is a placeholder', (text) => {
    expect(isPlaceholder(text)).toBe(true);
  });

  it.each(['The shipment is delivered', 'TODO: later', 'tbd.'])('%j is not', (text) => {
    expect(isPlaceholder(text)).toBe(false);
  });
});
