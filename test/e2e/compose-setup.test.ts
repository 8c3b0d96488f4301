/**
 * deploy/temporal/setup-namespace.sh, the temporal-setup job of docker-compose.yml, run with the very arguments the
 * compose file gives it, against the real dev server and the real `temporal` CLI (the dev server's own binary), on a
 * namespace of its own.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { SearchAttributeType } from '@temporalio/common';
import proto from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse } from 'yaml';
import { ensureDevServer } from '../../dev/temporal/provision.js';
import { allSearchAttributes } from '../../workflows/search-attributes.js';

const { IndexedValueType } = proto.temporal.api.enums.v1;
const root = fileURLToPath(new URL('../../', import.meta.url));
const script = path.join(root, 'deploy/temporal/setup-namespace.sh');
const composeArgs = (
  parse(readFileSync(path.join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
    services: { 'temporal-setup': { command: string[] } };
  }
).services['temporal-setup'].command;

const namespace = `compose-setup-${randomUUID().slice(0, 8)}`;
const days = (n: number) => n * 24 * 3600;
const indexTypes: Partial<Record<SearchAttributeType, proto.temporal.api.enums.v1.IndexedValueType>> = {
  [SearchAttributeType.KEYWORD]: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  [SearchAttributeType.DATETIME]: IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
  [SearchAttributeType.BOOL]: IndexedValueType.INDEXED_VALUE_TYPE_BOOL,
};

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the script like the compose job does: `sh setup-namespace.sh NAME=Type ...` with TEMPORAL_* set. */
async function runSetup(args: string[], retention: string, onNamespace = namespace): Promise<Run> {
  const cli = ensureDevServer({ allowDownload: false, log: () => {} });
  if (cli.type !== 'existing-path') throw new Error('the temporal CLI binary is needed (npm run provision)');
  const env = {
    ...process.env,
    PATH: `${path.dirname(cli.path)}${path.delimiter}${process.env.PATH ?? ''}`,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: onNamespace,
    TEMPORAL_NAMESPACE_RETENTION: retention,
    SETUP_MAX_ATTEMPTS: '30',
  };
  try {
    const { stdout, stderr } = await promisify(execFile)('sh', [script, ...args], { env, timeout: 90_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

let connection: Connection;
let firstRun: Run;

beforeAll(async () => {
  connection = await Connection.connect({ address: inject('temporalAddress') });
  firstRun = await runSetup(composeArgs, '720h');
}, 120_000);

afterAll(async () => {
  await connection?.close();
});

const describeNamespace = (name = namespace) => connection.workflowService.describeNamespace({ namespace: name });

describe('setup-namespace.sh (the temporal-setup job)', () => {
  it('creates the namespace with 30 days of retention', async () => {
    const described = await describeNamespace();

    expect(firstRun.code, firstRun.stderr).toBe(0);
    expect(Number(described.config?.workflowExecutionRetentionTtl?.seconds)).toBe(days(30));
  });

  it('registers every search attribute of workflows/search-attributes.ts with its type', async () => {
    const listed = await connection.operatorService.listSearchAttributes({ namespace });
    const expected = Object.fromEntries(allSearchAttributes.map((key) => [key.name, indexTypes[key.type]]));

    expect(firstRun.code, firstRun.stderr).toBe(0);
    expect(listed.customAttributes).toMatchObject(expected);
  });

  it('runs again without registering anything twice, and applies a new retention', async () => {
    const rerun = `${namespace}-rerun`;
    const once = await runSetup(composeArgs, '720h', rerun);
    const aliasesBefore = (await describeNamespace(rerun)).config?.customSearchAttributeAliases;

    const again = await runSetup(composeArgs, '1000h', rerun);
    const after = await describeNamespace(rerun);

    expect([once.code, again.code], again.stderr).toEqual([0, 0]);
    expect(Object.keys(aliasesBefore ?? {})).toHaveLength(allSearchAttributes.length);
    expect(after.config?.customSearchAttributeAliases).toEqual(aliasesBefore);
    expect(Number(after.config?.workflowExecutionRetentionTtl?.seconds)).toBe(1000 * 3600);
  });

  it('fails when a search attribute exists with another type', async () => {
    const { name, type } = allSearchAttributes[0];
    const otherType = (type as SearchAttributeType) === SearchAttributeType.DATETIME ? 'Keyword' : 'Datetime';

    const clash = await runSetup([`${name}=${otherType}`], '720h');

    expect(clash.code).toBe(1);
    expect(clash.stderr).toContain(`${name} exists with another type`);
  });

  it('refuses an argument that is not NAME=Type before touching the namespace', async () => {
    const bad = await runSetup(['ExpectationKind'], '720h');

    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('bad argument: ExpectationKind');
  });
});
