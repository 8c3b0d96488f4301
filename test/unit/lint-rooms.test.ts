/**
 * The import rules of eslint.config.js that keep each room to itself (STYLE 1-2): code linted as if it stood in
 * workflows/, core/ or activities/, with deliberate violations and the imports that must stay allowed.
 */
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import { describe, expect, it } from 'vitest';

// The project's own config; the probes are not files of the TypeScript project, so type-aware rules are off.
const eslint = new ESLint({ overrideConfig: { files: ['**/*.ts'], ...tseslint.configs.disableTypeChecked } });

const RULE = '@typescript-eslint/no-restricted-imports';

/** The no-restricted-imports messages for one import line (and a use of it, so nothing else is reported). */
async function roomErrors(filePath: string, importLine: string, used = 'x'): Promise<string[]> {
  const [result] = await eslint.lintText(`${importLine}\nexport const used: unknown = ${used};\n`, { filePath });
  return result!.messages.filter((message) => message.ruleId === RULE).map((message) => message.message);
}

const byPattern = (source: string, why: string) => `'${source}' import is restricted from being used by a pattern. ${why}`;
const NODE = 'Node built-ins do not exist in the deterministic workflow sandbox.';

describe('workflows/', () => {
  const file = 'workflows/probe.ts';

  it('refuses Node built-ins, with or without the node: prefix', async () => {
    expect(await roomErrors(file, "import { readFileSync as x } from 'node:fs';")).toEqual([byPattern('node:fs', NODE)]);
    expect(await roomErrors(file, "import { randomUUID as x } from 'crypto';")).toEqual([byPattern('crypto', NODE)]);
    expect(await roomErrors(file, "import { readFile as x } from 'fs/promises';")).toEqual([byPattern('fs/promises', NODE)]);
  });

  it('refuses runtime code from src/ and from activities/', async () => {
    expect(await roomErrors(file, "import { expectationWorkflowId as x } from '../src/temporal/ids.js';")).toEqual([
      byPattern('../src/temporal/ids.js', 'Import types only from src/: its runtime code is not deterministic (STYLE 2).'),
    ]);
    expect(await roomErrors(file, "import { createActivities as x } from '../activities/index.js';")).toEqual([
      byPattern(
        '../activities/index.js',
        'Workflows reach activities through proxyActivities and import them as types only (STYLE 2).',
      ),
    ]);
  });

  it('refuses a value import even when it also holds type specifiers', async () => {
    expect(await roomErrors(file, "import { type Client, Connection as x } from '@temporalio/client';")).toEqual([
      byPattern('@temporalio/client', 'Workflow code imports only @temporalio/workflow and @temporalio/common at runtime (STYLE 2).'),
    ]);
  });

  it('allows the workflow packages, siblings, core/ and type-only imports from anywhere', async () => {
    const allowed: [string, string?][] = [
      ["import { proxyActivities as x } from '@temporalio/workflow';"],
      ["import { ApplicationFailure as x } from '@temporalio/common';"],
      ["import { nextDeadline as x } from './decisions.js';"],
      ["import { addDuration as x } from '../core/duration.js';"],
      ["import type * as activities from '../activities/index.js';", '{} as typeof activities'],
      ["import { type Expectation } from '../src/schemas/extension.js';", '{} as Expectation'],
      ["import type { Server } from 'node:http';", '{} as Server'],
    ];
    for (const [line, used] of allowed) expect(await roomErrors(file, line, used), line).toEqual([]);
  });
});

describe('core/', () => {
  const file = 'core/probe.ts';

  it('refuses runtime code from src/, workflows/ and activities/, and Node built-ins', async () => {
    expect(await roomErrors(file, "import { loadConfig as x } from '../src/config.js';")).toEqual([
      byPattern('../src/config.js', 'core/ is the ground floor: it imports types only from src/.'),
    ]);
    expect(await roomErrors(file, "import { nextDeadline as x } from '../workflows/decisions.js';")).toEqual([
      byPattern('../workflows/decisions.js', 'core/ is the ground floor: it imports types only from workflows/.'),
    ]);
    expect(await roomErrors(file, "import { createActivities as x } from '../activities/index.js';")).toEqual([
      byPattern('../activities/index.js', 'core/ is the ground floor: it imports types only from activities/.'),
    ]);
    expect(await roomErrors(file, "import { createHash as x } from 'node:crypto';")).toEqual([byPattern('node:crypto', NODE)]);
  });

  it('allows type-only imports from the floors above and its own siblings', async () => {
    expect(await roomErrors(file, "import type { AgentRef } from '../workflows/messages.js';", '{} as AgentRef')).toEqual([]);
    expect(await roomErrors(file, "import { addDuration as x } from './duration.js';")).toEqual([]);
  });
});

describe('activities/', () => {
  const file = 'activities/probe.ts';

  it('refuses the HTTP layer: src/http/ and express, types included', async () => {
    expect(await roomErrors(file, "import { createApp as x } from '../src/http/app.js';")).toEqual([
      byPattern('../src/http/app.js', 'Activities do not import the HTTP layer (src/http/).'),
    ]);
    expect(await roomErrors(file, "import x from 'express';")).toEqual([
      "'express' import is restricted from being used. Activities do not import the HTTP layer (express).",
    ]);
    expect(await roomErrors(file, "import type { AppDeps } from '../src/http/app.js';", '{} as AppDeps')).toEqual([
      byPattern('../src/http/app.js', 'Activities do not import the HTTP layer (src/http/).'),
    ]);
  });

  it('allows the rest of src/, Node built-ins and other packages', async () => {
    expect(await roomErrors(file, "import { expectationWorkflowId as x } from '../src/temporal/ids.js';")).toEqual([]);
    expect(await roomErrors(file, "import { createHash as x } from 'node:crypto';")).toEqual([]);
    expect(await roomErrors(file, "import { ClientFactory as x } from '@a2a-js/sdk/client';")).toEqual([]);
  });
});
