import { mkdtemp, readFile, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  agentDirectory,
  createPrincipalStore,
  loadReloadingPrincipals,
  ensurePrincipalsFile,
  hasRole,
  loadPrincipals,
  PrincipalsFileError,
  tokenSha256,
} from '../../../../src/auth/principals.js';

const tmp = () => mkdtemp(path.join(os.tmpdir(), 'principals-'));

const file = {
  principals: [
    {
      id: 'shipping-agent',
      tokenSha256: tokenSha256('agent-token'),
      roles: ['agent' as const],
      agent: { cardUrl: 'http://127.0.0.1:9999/.well-known/agent-card.json', authorization: 'Bearer w' },
    },
    { id: 'carrier-feed', tokenSha256: tokenSha256('feed-token'), roles: ['reporter' as const] },
    { id: 'ops', tokenSha256: tokenSha256('ops-token').toUpperCase(), roles: ['reader' as const, 'admin' as const] },
  ],
};

describe('tokenSha256', () => {
  it('is the hex sha256 of the token', () => {
    expect(tokenSha256('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});

describe('createPrincipalStore', () => {
  const store = createPrincipalStore(file);

  it('finds the principal of a token, whatever the case of the stored hex', () => {
    expect(store.authenticate('ops-token')).toEqual({ id: 'ops', roles: ['reader', 'admin'], agent: undefined });
  });

  it('carries the agent reference of an agent principal', () => {
    expect(store.authenticate('agent-token')?.agent).toEqual(file.principals[0]!.agent);
  });

  it('finds nobody for an unknown token, an empty one, or a hash passed as the token', () => {
    expect([store.authenticate('nope'), store.authenticate(''), store.authenticate(tokenSha256('ops-token'))]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
  });

  it('answers roles', () => {
    const feed = store.authenticate('feed-token')!;

    expect([hasRole(feed, 'reporter'), hasRole(feed, 'agent')]).toEqual([true, false]);
  });
});

describe('loadPrincipals', () => {
  /** Writes `content` as the principals file of a fresh directory and answers its path. */
  async function principalsFile(content: unknown): Promise<string> {
    const at = path.join(await tmp(), 'p.json');
    await writeFile(at, JSON.stringify(content));
    return at;
  }

  /** Loads the file at `at`, expecting a refusal that names the file, and answers the field errors, one a line. */
  async function fieldErrorsOf(at: string): Promise<string[]> {
    const error = (await loadPrincipals(at).catch((e: unknown) => e)) as Error;
    const [header, ...fieldErrors] = error.message.split('\n');
    expect(header).toBe(`${at}: invalid principals file`);
    return fieldErrors;
  }

  it('loads a valid file', async () => {
    const store = await loadPrincipals(await principalsFile(file));

    expect(store.authenticate('feed-token')?.id).toBe('carrier-feed');
  });

  it('refuses an agent without cardUrl and a hash that is not sha256, naming both', async () => {
    const at = await principalsFile({ principals: [{ id: 'a', tokenSha256: 'abc', roles: ['agent'] }] });

    await expect(loadPrincipals(at)).rejects.toBeInstanceOf(PrincipalsFileError);
    expect(await fieldErrorsOf(at)).toEqual([
      '  principals.0.tokenSha256: must be the hex sha256 of the bearer token (64 hex digits)',
      '  principals.0.agent: a principal with the agent role needs agent.cardUrl',
    ]);
  });

  it('refuses a card URL that is not http(s) or that names a user, at load rather than at every delivery', async () => {
    const agentWith = (id: string, cardUrl: string) => ({
      id,
      tokenSha256: 'a'.repeat(63) + id,
      roles: ['agent'],
      agent: { cardUrl },
    });
    const at = await principalsFile({
      principals: [agentWith('1', 'file:///etc/agent-card.json'), agentWith('2', 'https://bot:pw@agents.example/card')],
    });

    expect(await fieldErrorsOf(at)).toEqual([
      '  principals.0.agent.cardUrl: must be an http or https URL',
      '  principals.1.agent.cardUrl: must not name a user or password; the credential goes in agent.authorization',
    ]);
  });

  it('takes an id of 64 printable ASCII characters, and refuses one longer or with a space, naming each', async () => {
    const entry = (id: string, token: string) => ({ id, tokenSha256: tokenSha256(token), roles: ['reporter'] });
    const at = await principalsFile({ principals: [entry('f'.repeat(64), 'ok')] });
    const longest = await loadPrincipals(at);
    await writeFile(at, JSON.stringify({ principals: [entry('f'.repeat(65), 'long'), entry('a feed', 'spaced')] }));

    const fieldErrors = await fieldErrorsOf(at);

    expect(longest.authenticate('ok')?.id).toBe('f'.repeat(64));
    expect(fieldErrors).toEqual([
      '  principals.0.id: must be at most 64 characters',
      '  principals.1.id: must be printable ASCII without spaces',
    ]);
  });

  it('refuses two principals with one token', async () => {
    const twice = { principals: [file.principals[1]!, { ...file.principals[1]!, id: 'other' }] };

    await expect(loadPrincipals(await principalsFile(twice))).rejects.toThrow(/two principals share one token/);
  });
});

describe('loadReloadingPrincipals', () => {
  const agentEntry = (authorization: string, token = 'agent-token') => ({
    principals: [
      {
        ...file.principals[0]!,
        tokenSha256: tokenSha256(token),
        agent: { cardUrl: 'http://127.0.0.1:9/card', authorization },
      },
    ],
  });

  it('picks up a rotated agent credential and bearer token once the file changes', async () => {
    const at = path.join(await tmp(), 'p.json');
    await writeFile(at, JSON.stringify(agentEntry('Bearer old')));
    const store = await loadReloadingPrincipals(at);
    const directory = agentDirectory(store);
    const before = await directory.contact('shipping-agent');

    await writeFile(at, JSON.stringify(agentEntry('Bearer new-and-longer', 'new-token')));
    const after = await directory.contact('shipping-agent');

    expect(before).toEqual({ cardUrl: 'http://127.0.0.1:9/card', authorization: 'Bearer old' });
    expect(after).toEqual({ cardUrl: 'http://127.0.0.1:9/card', authorization: 'Bearer new-and-longer' });
    expect([store.authenticate('agent-token'), store.authenticate('new-token')?.id]).toEqual([
      undefined,
      'shipping-agent',
    ]);
    expect(await directory.contact('nobody')).toBeUndefined();
  });

  it('keeps the last good principals when a change cannot be read, and reports it once', async () => {
    const at = path.join(await tmp(), 'p.json');
    await writeFile(at, JSON.stringify(agentEntry('Bearer old')));
    const errors: string[] = [];
    const store = await loadReloadingPrincipals(at, { onError: (error) => errors.push(error.message) });

    await writeFile(at, '{"principals": [');
    await store.refresh();
    await store.refresh();

    expect(store.byId('shipping-agent')?.agent?.authorization).toBe('Bearer old');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(new RegExp(`^${at.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: `));
  });
});

describe('ensurePrincipalsFile', () => {
  it('writes one admin (+reader) token as sha256 with mode 0600 and returns the token once', async () => {
    const dir = await tmp();

    const first = await ensurePrincipalsFile(dir);
    const second = await ensurePrincipalsFile(dir);

    const stored = JSON.parse(await readFile(first.file, 'utf8')) as typeof file;
    expect(first.file).toBe(path.join(dir, 'principals.json'));
    expect(stored.principals).toEqual([
      { id: 'admin', tokenSha256: tokenSha256(first.generatedToken!), roles: ['admin', 'reader', 'reporter'] },
    ]);
    expect((await stat(first.file)).mode & 0o777).toBe(0o600);
    expect(second).toEqual({ file: first.file });
    expect((await loadPrincipals(first.file)).authenticate(first.generatedToken!)?.id).toBe('admin');
  });
});
