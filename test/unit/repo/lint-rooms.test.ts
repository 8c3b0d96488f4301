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

/** Deliberate violations, by the folder the file stands in: the import, the one error expected. */
const refused: Record<string, [importLine: string, error: string][]> = {
  workflows: [
    ["import { x } from 'node:fs';", byPattern('node:fs', NODE)],
    ["import { x } from 'crypto';", byPattern('crypto', NODE)],
    ["import { x } from 'fs/promises';", byPattern('fs/promises', NODE)],
    ["import { x } from '../src/temporal/ids.js';", byPattern('../src/temporal/ids.js', SRC)],
    ["import { x } from '../activities/index.js';", byPattern('../activities/index.js', ACTIVITIES)],
    // One value specifier makes the whole import a runtime one.
    ["import { type Client, x } from '@temporalio/client';", byPattern('@temporalio/client', PACKAGES)],
    // The development machinery is kept out of the product even as types, here as in src/.
    ["import type { Cluster as x } from '../dev/cluster/cluster.js';", byPattern('../dev/cluster/cluster.js', DEV)],
  ],
  core: [
    ["import { x } from '../src/config.js';", byPattern('../src/config.js', floor('src/'))],
    ["import { x } from '../workflows/outbox.js';", byPattern('../workflows/outbox.js', floor('workflows/'))],
    ["import { x } from '../activities/index.js';", byPattern('../activities/index.js', floor('activities/'))],
    ["import { x } from 'node:crypto';", byPattern('node:crypto', NODE)],
  ],
  activities: [
    ["import { x } from '../src/http/app.js';", byPattern('../src/http/app.js', BELOW_SRC)],
    ["import x from 'express';", EXPRESS],
    // src/ is kept out of activities even as types, and out of a folder of activities/ too.
    ["import type { AppDeps as x } from '../src/http/app.js';", byPattern('../src/http/app.js', BELOW_SRC)],
    ["import { x } from '../src/temporal/ids.js';", byPattern('../src/temporal/ids.js', BELOW_SRC)],
    ["import { type Config as x } from '../src/config.js';", byPattern('../src/config.js', BELOW_SRC)],
  ],
  'activities/agent-card': [
    ["import { x } from '../../src/service/errors.js';", byPattern('../../src/service/errors.js', BELOW_SRC)],
  ],
  'src/client': [
    ["import { x } from '@temporalio/client';", byPattern('@temporalio/client', CLIENT_PACKAGES)],
    ["import x from 'express';", byPattern('express', CLIENT_PACKAGES)],
    ["import { x } from 'node:crypto';", byPattern('node:crypto', CLIENT_PACKAGES)],
    ["import { x } from '../service/errors.js';", byPattern('../service/errors.js', CLIENT_SRC)],
    ["import { x } from '../schemas/a2a.js';", byPattern('../schemas/a2a.js', CLIENT_SRC)],
    [
      "import type { Cluster as x } from '../../dev/cluster/cluster.js';",
      byPattern('../../dev/cluster/cluster.js', DEV),
    ],
  ],
  src: [["import { x } from '../dev/temporal/embedded.js';", byPattern('../dev/temporal/embedded.js', DEV)]],
  'src/temporal': [
    [
      "import type { DevServer as x } from '../../dev/temporal/dev-server.js';",
      byPattern('../../dev/temporal/dev-server.js', DEV),
    ],
  ],
};

/** What must stay allowed, by folder: the workflow packages, siblings, core/, zod and core/ for the client, and type-only imports from anywhere. */
const allowed: Record<string, string[]> = {
  workflows: [
    "import { x } from '@temporalio/workflow';",
    "import { x } from '@temporalio/common';",
    "import { x } from './decisions.js';",
    "import { x } from '../core/duration.js';",
    "import type * as activities from '../activities/index.js'; const x = {} as typeof activities;",
    "import { type Expectation } from '../core/schemas/extension.js'; const x = {} as Expectation;",
    "import { type Principal } from '../src/auth/principals.js'; const x = {} as Principal;",
    "import type { Server } from 'node:http'; const x = {} as Server;",
  ],
  core: [
    "import type { AgentRef } from '../workflows/messages.js'; const x = {} as AgentRef;",
    "import { x } from './duration.js';",
  ],
  activities: [
    "import { x } from '../core/ids.js';",
    "import { x } from '../workflows/messages.js';",
    "import type { DeliverLapseInput as x } from '../workflows/activity-types.js';",
    "import { x } from './outbound/guarded-fetch.js';",
    "import { x } from 'node:crypto';",
    "import { x } from '@a2a-js/sdk/client';",
  ],
  'activities/agent-card': ["import { x } from '../outbound/guarded-fetch.js';"],
  'src/client': [
    "import { x } from 'zod';",
    "import { x } from '../../core/schemas/extension.js';",
    "import { x } from '../../core/duration.js';",
    "import { x } from './errors.js';",
    "import type { IngestResult } from '../service/ingest.js'; const x = {} as IngestResult;",
    "import { type Message } from '@a2a-js/sdk'; const x = {} as Message;",
  ],
  'src/temporal': ["import { x } from '../../workflows/search-attributes.js';"],
  src: ["import { x } from '../devices/registry.js';"],
};

describe('the rooms of eslint.config.js', () => {
  const refusedCases = Object.entries(refused).flatMap(([folder, rows]) =>
    rows.map(([importLine, error]): [string, string, string] => [folder, importLine, error]),
  );
  const allowedCases = Object.entries(allowed).flatMap(([folder, lines]) =>
    lines.map((importLine): [string, string] => [folder, importLine]),
  );

  it.each(refusedCases)('%s/ refuses %s', async (folder, importLine, error) => {
    expect(await roomErrors(`${folder}/probe.ts`, importLine)).toEqual([error]);
  });

  it.each(allowedCases)('%s/ allows %s', async (folder, importLine) => {
    expect(await roomErrors(`${folder}/probe.ts`, importLine)).toEqual([]);
  });
});
