/**
 * One real Temporal dev server and one workflow bundle for the whole test run (DEVELOPERS: not one per file).
 * A server that cannot start fails the run: no tier is silently skipped.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import type { TestProject } from 'vitest/node';
import { startDevServer } from '../../dev/temporal/dev-server.js';
import { ensureTestServer } from '../../dev/temporal/provision.js';
import { workflowsPath } from '../../src/temporal/workflows-path.js';
import { ensureChromium } from './chromium.js';
import { freePort } from './net.js';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    workflowBundlePath: string;
    testServerPath: string;
    /** The shared dev server's web UI, e.g. http://127.0.0.1:43123 (for the browser test). */
    temporalUiUrl: string;
    /** The Chromium the browser test drives (test/support/chromium.ts). */
    chromiumPath: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const outDir = path.resolve('test-output');
  mkdirSync(outDir, { recursive: true });

  // First, so that a machine without a browser learns it (and how to get one) before minutes of Temporal.
  project.provide('chromiumPath', ensureChromium());

  const testServer = await ensureTestServer({ allowDownload: true });
  if (testServer.type !== 'existing-path')
    throw new Error('test setup: no time-skipping test server (run npm run provision)');
  project.provide('testServerPath', testServer.path);

  const bundle = await bundleWorkflowCode({
    workflowsPath,
    logger: { log() {}, info() {}, warn() {}, error: console.error, debug() {}, trace() {} },
  });
  const bundlePath = path.join(outDir, 'workflow-bundle.js');
  writeFileSync(bundlePath, bundle.code);
  project.provide('workflowBundlePath', bundlePath);

  const server = await startDevServer({
    port: await freePort(),
    uiPort: await freePort(),
    logFile: path.join(outDir, 'dev-server.log'),
    // Low enough that the busy-subject tests see routers and expectations continue as new.
    dynamicConfig: ['limit.historyCount.suggestContinueAsNew=300'],
  });
  project.provide('temporalAddress', server.address);
  process.env.WATCHER_TEST_UI_URL = server.uiUrl;
  project.provide('temporalUiUrl', server.uiUrl ?? '');
  return () => server.stop();
}
