/**
 * The import rules of eslint.config.js that keep each room to itself (STYLE 1-2): code linted as if it stood in
 * workflows/, core/, activities/, src/ or src/client/, with deliberate violations and the imports that must stay allowed.
 */
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import { describe, expect, it } from 'vitest';

// The project's own config; the probes are not files of the TypeScript project, so type-aware rules are off.
const eslint = new ESLint({ overrideConfig: { files: ['**/*.ts'], ...tseslint.configs.disableTypeChecked } });

const RULE = '@typescript-eslint/no-restricted-imports';

/** The no-restricted-imports messages for an import line that binds `x` (exported, so nothing else is reported). */
async function roomErrors(filePath: string, importLine: string): Promise<string[]> {
  const [result] = await eslint.lintText(`${importLine}\nexport const used: unknown = x;\n`, { filePath });
  return result!.messages.filter((message) => message.ruleId === RULE).map((message) => message.message);
}

const byPattern = (source: string, why: string) =>
  `'${source}' import is restricted from being used by a pattern. ${why}`;
const NODE = 'Node built-ins do not exist in the deterministic workflow sandbox.';

const SRC = 'Import types only from src/: its runtime code is not deterministic (STYLE 2).';
const ACTIVITIES = 'Workflows reach activities through proxyActivities and import them as types only (STYLE 2).';
const PACKAGES = 'Workflow code imports only @temporalio/workflow and @temporalio/common at runtime (STYLE 2).';
const floor = (folder: string) => `core/ is the ground floor: it imports types only from ${folder}.`;
const BELOW_SRC =
  'Activities stand below src/: they import core/, workflows/ and activities/ only, not even types from src/.';
const EXPRESS = "'express' import is restricted from being used. Activities do not import the HTTP layer (express).";
const CLIENT_PACKAGES = 'The client loads no package but zod at run time: no Temporal, Express or Node built-ins.';
const CLIENT_SRC =
  'The client imports only core/ (the schemas, the duration arithmetic) at run time: the bridge and Temporal stay out of it.';
const DEV =
  'The product never imports dev/ (the dev server, provisioning, the local cluster), not even types: the image has no dev/.';

/** Deliberate violations: where the file stands, the import, the one error expected. */
const refused: [folder: string, importLine: string, error: string][] = [
  ['workflows', "import { x } from 'node:fs';", byPattern('node:fs', NODE)],
  ['workflows', "import { x } from 'crypto';", byPattern('crypto', NODE)],
  ['workflows', "import { x } from 'fs/promises';", byPattern('fs/promises', NODE)],
  ['workflows', "import { x } from '../src/temporal/ids.js';", byPattern('../src/temporal/ids.js', SRC)],
  ['workflows', "import { x } from '../activities/index.js';", byPattern('../activities/index.js', ACTIVITIES)],
  // One value specifier makes the whole import a runtime one.
  ['workflows', "import { type Client, x } from '@temporalio/client';", byPattern('@temporalio/client', PACKAGES)],
  ['core', "import { x } from '../src/config.js';", byPattern('../src/config.js', floor('src/'))],
  ['core', "import { x } from '../workflows/outbox.js';", byPattern('../workflows/outbox.js', floor('workflows/'))],
  ['core', "import { x } from '../activities/index.js';", byPattern('../activities/index.js', floor('activities/'))],
  ['core', "import { x } from 'node:crypto';", byPattern('node:crypto', NODE)],
  ['activities', "import { x } from '../src/http/app.js';", byPattern('../src/http/app.js', BELOW_SRC)],
  ['activities', "import x from 'express';", EXPRESS],
  // src/ is kept out of activities even as types, and out of a folder of activities/ too.
  ['activities', "import type { AppDeps as x } from '../src/http/app.js';", byPattern('../src/http/app.js', BELOW_SRC)],
  ['activities', "import { x } from '../src/temporal/ids.js';", byPattern('../src/temporal/ids.js', BELOW_SRC)],
  ['activities', "import { type Config as x } from '../src/config.js';", byPattern('../src/config.js', BELOW_SRC)],
  [
    'activities/agent-card',
    "import { x } from '../../src/service/errors.js';",
    byPattern('../../src/service/errors.js', BELOW_SRC),
  ],
  ['src/client', "import { x } from '@temporalio/client';", byPattern('@temporalio/client', CLIENT_PACKAGES)],
  ['src/client', "import x from 'express';", byPattern('express', CLIENT_PACKAGES)],
  ['src/client', "import { x } from 'node:crypto';", byPattern('node:crypto', CLIENT_PACKAGES)],
  ['src/client', "import { x } from '../service/errors.js';", byPattern('../service/errors.js', CLIENT_SRC)],
  ['src/client', "import { x } from '../schemas/a2a.js';", byPattern('../schemas/a2a.js', CLIENT_SRC)],
  ['src', "import { x } from '../dev/temporal/embedded.js';", byPattern('../dev/temporal/embedded.js', DEV)],
  // The development machinery is kept out of the product even as types.
  [
    'src/temporal',
    "import type { DevServer as x } from '../../dev/temporal/dev-server.js';",
    byPattern('../../dev/temporal/dev-server.js', DEV),
  ],
  [
    'src/client',
    "import type { Cluster as x } from '../../dev/cluster/cluster.js';",
    byPattern('../../dev/cluster/cluster.js', DEV),
  ],
  [
    'workflows',
    "import type { Cluster as x } from '../dev/cluster/cluster.js';",
    byPattern('../dev/cluster/cluster.js', DEV),
  ],
];

/** What must stay allowed: the workflow packages, siblings, core/, zod and core/ for the client, and type-only imports from anywhere. */
const allowed: [folder: string, importLine: string][] = [
  ['workflows', "import { x } from '@temporalio/workflow';"],
  ['workflows', "import { x } from '@temporalio/common';"],
  ['workflows', "import { x } from './decisions.js';"],
  ['workflows', "import { x } from '../core/duration.js';"],
  ['workflows', "import type * as activities from '../activities/index.js'; const x = {} as typeof activities;"],
  ['workflows', "import { type Expectation } from '../core/schemas/extension.js'; const x = {} as Expectation;"],
  ['workflows', "import { type Principal } from '../src/auth/principals.js'; const x = {} as Principal;"],
  ['workflows', "import type { Server } from 'node:http'; const x = {} as Server;"],
  ['core', "import type { AgentRef } from '../workflows/messages.js'; const x = {} as AgentRef;"],
  ['core', "import { x } from './duration.js';"],
  ['activities', "import { x } from '../core/ids.js';"],
  ['activities', "import { x } from '../workflows/messages.js';"],
  ['activities', "import type { DeliverLapseInput as x } from '../workflows/activity-types.js';"],
  ['activities', "import { x } from './outbound/guarded-fetch.js';"],
  ['activities/agent-card', "import { x } from '../outbound/guarded-fetch.js';"],
  ['activities', "import { x } from 'node:crypto';"],
  ['activities', "import { x } from '@a2a-js/sdk/client';"],
  ['src/client', "import { x } from 'zod';"],
  ['src/client', "import { x } from '../../core/schemas/extension.js';"],
  ['src/client', "import { x } from '../../core/duration.js';"],
  ['src/client', "import { x } from './errors.js';"],
  ['src/client', "import type { IngestResult } from '../service/ingest.js'; const x = {} as IngestResult;"],
  ['src/client', "import { type Message } from '@a2a-js/sdk'; const x = {} as Message;"],
  ['src/temporal', "import { x } from '../../workflows/search-attributes.js';"],
  ['src', "import { x } from '../devices/registry.js';"],
];

describe('the rooms of eslint.config.js', () => {
  it.each(refused)('%s/ refuses %s', async (folder, importLine, error) => {
    expect(await roomErrors(`${folder}/probe.ts`, importLine)).toEqual([error]);
  });

  it.each(allowed)('%s/ allows %s', async (folder, importLine) => {
    expect(await roomErrors(`${folder}/probe.ts`, importLine)).toEqual([]);
  });
});
