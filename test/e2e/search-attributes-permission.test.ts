/**
 * The search attributes where the worker may not register them. The server authorizes as a secured cluster does
 * (Temporal's default authorizer and JWT claim mapper, test/support/authorized-server.ts): a namespace writer may
 * list search attributes but AddSearchAttributes answers it PERMISSION_DENIED, as Temporal Cloud answers a worker's
 * API key. The worker connects with a profile whose API key is a writer's token, as a team would deploy it.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ensureDevServer } from '../../dev/temporal/provision.js';
import {
  allSearchAttributes,
  indexedValueType,
  registerSearchAttributes,
  SearchAttributesError,
} from '../../src/temporal/search-attributes.js';
import { startAuthorizedServer, type AuthorizedServer } from '../support/authorized-server.js';
import { writePrincipalsFile } from '../support/agents.js';
import { spawnEntry, type Spawned } from '../support/processes.js';

const { IndexedValueType } = proto.temporal.api.enums.v1;
const ours = Object.fromEntries(allSearchAttributes.map((key) => [key.name, indexedValueType[key.type]!]));
const names = allSearchAttributes.map((key) => key.name);

const dir = mkdtempSync(path.join(os.tmpdir(), 'watcher-sa-permission-'));
const configFile = path.join(dir, 'temporal.toml');
const running: Spawned[] = [];
const connections: Connection[] = [];
let server: AuthorizedServer;
let principalsFile: string;
let workerApiKey: string;

beforeAll(async () => {
  server = await startAuthorizedServer();
  // ready: an operator created our attributes; bare: nobody did; fresh: for an admin; clash: one of ours as Text.
  for (const namespace of ['ready', 'bare', 'fresh', 'clash']) await server.createNamespace(namespace);
  const admin = await connect(['temporal-system:admin']);
  await admin.operatorService.addSearchAttributes({ namespace: 'ready', searchAttributes: ours });
  await admin.operatorService.addSearchAttributes({
    namespace: 'clash',
    searchAttributes: { ExpectationKind: IndexedValueType.INDEXED_VALUE_TYPE_TEXT },
  });
  workerApiKey = server.token(['ready:write', 'bare:write']);
  const profile = (name: string, apiKey: string) =>
    [
      `[profile.${name}]`,
      `address = "${server.address}"`,
      `api_key = "${apiKey}"`,
      // The test server speaks plaintext; an API key would otherwise turn TLS on.
      `[profile.${name}.tls]`,
      'disabled = true',
      '',
    ].join('\n');
  writeFileSync(
    configFile,
    [profile('worker', workerApiKey), profile('admin', server.token(['temporal-system:admin']))].join('\n'),
  );
  principalsFile = writePrincipalsFile([
    { id: 'shipping-agent', roles: ['agent'], cardUrl: 'http://127.0.0.1:1/card.json' },
  ]);
}, 120_000);

afterAll(async () => {
  await Promise.all(running.map((p) => p.stop('SIGKILL')));
  await Promise.all(connections.map((c) => c.close()));
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
  rmSync(path.dirname(principalsFile ?? dir), { recursive: true, force: true });
});

async function connect(permissions: string[]): Promise<Connection> {
  const connection = await server.connect(permissions);
  connections.push(connection);
  return connection;
}

/** `npm run worker` on `namespace` with the `worker` profile: a namespace writer's API key. */
function startWorker(namespace: string): Spawned {
  const worker = spawnEntry('src/worker.ts', {
    TEMPORAL_CONFIG_FILE: configFile,
    TEMPORAL_PROFILE: 'worker',
    TEMPORAL_NAMESPACE: namespace,
    TEMPORAL_TASK_QUEUE: 'expectations',
    WATCHER_PRINCIPALS_FILE: principalsFile,
    WATCHER_WORKFLOW_BUNDLE: inject('workflowBundlePath'),
    WATCHER_WORKER_METRICS_PORT: '0',
    WATCHER_DATA_DIR: dir,
  });
  running.push(worker);
  return worker;
}

async function searchAttributesOf(namespace: string): Promise<Record<string, number>> {
  const admin = await connect(['temporal-system:admin']);
  const listed = await admin.operatorService.listSearchAttributes({ namespace });
  return Object.fromEntries(Object.entries(listed.customAttributes ?? {}).filter(([name]) => names.includes(name)));
}

describe('a worker that may not register search attributes', () => {
  it('is refused for real: the writer may list them but not add them', async () => {
    const writer = await connect(['bare:write']);

    await expect(writer.operatorService.listSearchAttributes({ namespace: 'bare' })).resolves.toBeDefined();
    await expect(
      writer.operatorService.addSearchAttributes({ namespace: 'bare', searchAttributes: ours }),
    ).rejects.toMatchObject({
      code: 7,
      details: 'Request unauthorized.',
    });
  });

  it('starts when they exist with the right types', async () => {
    const worker = startWorker('ready');
    await worker.waitFor(/worker running/);

    expect(worker.output()).toContain('"msg":"search attributes present"');
    expect(worker.output()).toContain('Temporal connection settings from profile \\"worker\\"');
    expect(worker.output()).not.toContain(workerApiKey);
    expect(await worker.stop()).toBe(0);
  });

  it('stops when they are missing, printing the commands that create them; after those it starts', async () => {
    const refused = startWorker('bare');

    expect(await refused.exited).toBe(1);
    const output = refused.output();
    expect(output).toContain(
      `namespace "bare" lacks the search attributes ${names.join(', ')} and this worker may not create them`,
    );
    expect(output).toContain('(PERMISSION_DENIED: Request unauthorized.)');
    expect(output).toContain(
      'tcld namespace search-attributes add --namespace bare --search-attribute "ExpectationKind=Keyword" ' +
        '--search-attribute "ExpectationSubject=Keyword" --search-attribute "ExpectationState=Keyword" ' +
        '--search-attribute "ExpectationAgent=Keyword" --search-attribute "ExpectationFactKey=Keyword" ' +
        '--search-attribute "ExpectationDueAt=Datetime" --search-attribute "ExpectationLate=Bool"',
    );
    expect(await searchAttributesOf('bare')).toEqual({});

    // What an operator does next: the printed temporal CLI lines, as a namespace admin (the `admin` profile).
    const commands = [...output.matchAll(/^ +temporal (operator search-attribute create .*)$/gm)].map((m) =>
      m[1]!.split(' '),
    );
    expect(commands).toHaveLength(1);
    const cli = ensureDevServer();
    if (cli.type !== 'existing-path') throw new Error('no temporal CLI (npm run provision)');
    for (const args of commands) {
      const run = spawnSync(cli.path, [...args, '--config-file', configFile, '--profile', 'admin'], {
        encoding: 'utf8',
      });
      expect(run.status, `${args.join(' ')}: ${run.stderr}`).toBe(0);
    }
    expect(await searchAttributesOf('bare')).toEqual(ours);

    const worker = startWorker('bare');
    await worker.waitFor(/worker running/);
    expect(worker.output()).toContain('"msg":"search attributes present"');
    expect(await worker.stop()).toBe(0);
  });
});

describe('registerSearchAttributes', () => {
  it('registers the missing ones for a namespace admin, and then finds them present', async () => {
    const admin = await connect(['fresh:admin']);

    expect(await registerSearchAttributes(admin, 'fresh')).toEqual({ result: 'registered', added: names });
    expect(await searchAttributesOf('fresh')).toEqual(ours);
    expect(await registerSearchAttributes(admin, 'fresh')).toEqual({ result: 'present' });
  });

  it('refuses one of ours with another type, which no registration can change', async () => {
    const admin = await connect(['clash:admin']);

    const registering = registerSearchAttributes(admin, 'clash');

    await expect(registering).rejects.toBeInstanceOf(SearchAttributesError);
    await expect(registering).rejects.toThrow('ExpectationKind is Text; the watcher needs Keyword');
    expect(await searchAttributesOf('clash')).toEqual({ ExpectationKind: IndexedValueType.INDEXED_VALUE_TYPE_TEXT });
  });

  it('goes on with a warning when it may neither list nor register them', async () => {
    const stranger = await connect(['other:write']);

    const outcome = await registerSearchAttributes(stranger, 'ready');

    expect(outcome).toMatchObject({ result: 'unchecked' });
    const warning = outcome.result === 'unchecked' ? outcome.warning : '';
    expect(warning).toContain(
      'may neither list nor register search attributes on namespace "ready" (PERMISSION_DENIED: Request unauthorized.)',
    );
    expect(warning).toContain('tcld namespace search-attributes add --namespace ready');
  });
});
