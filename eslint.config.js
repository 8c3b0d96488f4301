// Lint rules of STYLE 11: no floating promises, type-only imports where only types are used.
// And the rooms of STYLE 1-2: what workflows/, core/, activities/, src/ and src/client/ may import (test/unit/repo/lint-rooms.test.ts).
import { builtinModules } from 'node:module';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Any Node built-in: `node:*`, or a bare name such as `fs`, `crypto`, `fs/promises`. */
const escape = (name) => name.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
const nodeBuiltin = `^(node:.*|${builtinModules.map(escape).join('|')})$`;
/** A relative import that climbs out of the folder into `src/`, `workflows/`, `activities/` or `dev/`. */
const into = (folder) => `^(\\.\\./)+${folder}(/|$)`;

/** The rooms: each rule names what it keeps out and why; type-only imports (`import type`, inline `type`) pass. */
const rooms = {
  nodeBuiltin: {
    regex: nodeBuiltin,
    allowTypeImports: true,
    message: 'Node built-ins do not exist in the deterministic workflow sandbox.',
  },
  src: {
    regex: into('src'),
    allowTypeImports: true,
    message: 'Import types only from src/: its runtime code is not deterministic (STYLE 2).',
  },
  workflows: {
    regex: into('workflows'),
    allowTypeImports: true,
    message: 'core/ is the ground floor: it imports types only from workflows/.',
  },
  activities: {
    regex: into('activities'),
    allowTypeImports: true,
    message: 'Workflows reach activities through proxyActivities and import them as types only (STYLE 2).',
  },
  // Not even types: the image copies no dev/ (Dockerfile), and what the product needs of it belongs in src/.
  dev: {
    regex: into('dev'),
    message:
      'The product never imports dev/ (the dev server, provisioning, the local cluster), not even types: the image has no dev/.',
  },
  // A bare specifier (neither relative nor absolute) that is no Node built-in and not one of the two packages made
  // for workflow code.
  packages: {
    regex: `^(?!${nodeBuiltin})(?!@temporalio/(workflow|common)(/|$))[^./]`,
    allowTypeImports: true,
    message: 'Workflow code imports only @temporalio/workflow and @temporalio/common at runtime (STYLE 2).',
  },
};

export default tseslint.config(
  { ignores: ['node_modules/', 'test-output/', 'scratch/', '.data/', 'bench/results/', 'dist/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  // Plain-JavaScript preloads run by `node --import` (src/early-signals.mjs): Node's globals, which only .ts files had.
  { files: ['**/*.mjs'], languageOptions: { globals: { process: 'readonly' } } },
  // The operator's page runs in the browser (src/ui/): the browser's globals it uses, and Node's none.
  {
    files: ['src/ui/**/*.js'],
    languageOptions: {
      globals: Object.fromEntries(
        ['document', 'window', 'location', 'fetch', 'URL', 'URLSearchParams', 'FormData', 'sessionStorage'].map(
          (name) => [name, 'readonly'],
        ),
      ),
    },
  },
  {
    // Plain Node scripts loaded with --import (src/early-signals.mjs, test/support/preload/): Node's globals.
    files: ['**/*.mjs'],
    languageOptions: { globals: { process: 'readonly' } },
  },
  {
    // Plain Node scripts loaded with `node --import` before tsx (src/early-signals.mjs, test preloads).
    files: ['**/*.mjs'],
    languageOptions: { globals: { process: 'readonly' } },
  },
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Plain JavaScript preloaded by `node --import` (src/early-signals.mjs, a test's preload): Node's globals.
    files: ['**/*.mjs'],
    languageOptions: { globals: { process: 'readonly', globalThis: 'readonly' } },
  },
  {
    // Deterministic workflow code: @temporalio/workflow, @temporalio/common, siblings, core/, and types.
    files: ['workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { patterns: [rooms.nodeBuiltin, rooms.src, rooms.activities, rooms.packages, rooms.dev] },
      ],
    },
  },
  {
    // The ground floor both the workflows and the bridge stand on: nothing runtime from the floors above.
    files: ['core/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            rooms.nodeBuiltin,
            { ...rooms.src, message: 'core/ is the ground floor: it imports types only from src/.' },
            rooms.workflows,
            { ...rooms.activities, message: 'core/ is the ground floor: it imports types only from activities/.' },
            rooms.dev,
          ],
        },
      ],
    },
  },
  {
    // The product: nothing of the development machinery (dev/), which the image does not carry.
    files: ['src/**/*.ts'],
    rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns: [rooms.dev] }] },
  },
  {
    // The client agent authors install (src/client/): zod and core/ at run time, types from anywhere
    // (test/unit/src/client/index.test.ts follows the whole graph, the schemas' own imports included).
    files: ['src/client/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(?!zod$)[^./]',
              allowTypeImports: true,
              message: 'The client loads no package but zod at run time: no Temporal, Express or Node built-ins.',
            },
            {
              // dev/ left to its own room below, which refuses types too (a type import matching this one passes).
              regex: '^\\.\\./(?!\\.\\./(core|dev)/)',
              allowTypeImports: true,
              message:
                'The client imports only core/ (the schemas, the duration arithmetic) at run time: the bridge and Temporal stay out of it.',
            },
            // This block replaces the src/ one for the client's files: that room again.
            rooms.dev,
          ],
        },
      ],
    },
  },
  {
    // Activities are the floor below the product (core ← workflows ← activities ← src): core/, workflows/ and their
    // own folder, never src/, not even its types; the bridge and the worker import them, not the other way round.
    files: ['activities/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: into('src'),
              message:
                'Activities stand below src/: they import core/, workflows/ and activities/ only, not even types from src/.',
            },
            rooms.dev,
          ],
          paths: [{ name: 'express', message: 'Activities do not import the HTTP layer (express).' }],
        },
      ],
    },
  },
);
