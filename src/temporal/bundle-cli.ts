/**
 * `npm run bundle [-- <file>] [--source-positions]`: writes the workflow bundle (default dist/workflow-bundle.js) that a
 * worker given WATCHER_WORKFLOW_BUNDLE loads, and beside it the tracing bundle (dist/workflow-bundle.tracing.js) that
 * the same worker loads instead when tracing is on; the Dockerfile runs it at image build time. Stack traces name
 * bundle lines unless `--source-positions` keeps webpack's full source map (workflow-bundle.ts withLineSourceMap).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { bundleWorkflows, DEFAULT_WORKFLOW_BUNDLE, tracingBundleOf } from './workflow-bundle.js';

async function main(): Promise<void> {
  const started = Date.now();
  const args = process.argv.slice(2);
  const sourcePositions = args.includes('--source-positions');
  const file = path.resolve(args.find((arg) => !arg.startsWith('--')) ?? DEFAULT_WORKFLOW_BUNDLE);
  mkdirSync(path.dirname(file), { recursive: true });
  for (const [target, tracing] of [
    [file, false],
    [tracingBundleOf(file), true],
  ] as const) {
    const code = await bundleWorkflows({ tracing, sourcePositions });
    writeFileSync(target, code);
    console.log(
      `workflow bundle${tracing ? ' with tracing' : ''}: ${target} (${Math.round(code.length / 1024)} KiB, ${((Date.now() - started) / 1000).toFixed(1)} s)`,
    );
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
