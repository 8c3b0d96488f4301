/**
 * The raw baseline's worker as a process of its own (scenarios 4 and 7 read its memory and CPU apart):
 * `node --import tsx bench/baseline/worker.ts <address> <namespace> <taskQueue> <bundle.js> [<fired file>]
 * [--max-cached-workflows=<n>]`, each timer's firing appended to the fired file. Its workflow cache is the watcher
 * worker's (given, or the watcher's default rule for this process's heap), so that both keep as many in memory.
 */
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { defaultMaxCachedWorkflows, heapLimitMiB } from '../../src/config.js';
import { createBaselineActivities } from './activities.js';

const CACHE_FLAG = '--max-cached-workflows=';

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const [address, namespace, taskQueue, bundle, firedFile] = argv.filter((arg) => !arg.startsWith('--'));
  const cacheArg = argv.find((arg) => arg.startsWith(CACHE_FLAG))?.slice(CACHE_FLAG.length);
  if (!address || !namespace || !taskQueue || !bundle)
    throw new Error(
      'usage: worker.ts <address> <namespace> <taskQueue> <bundle.js> [<fired file>] [--max-cached-workflows=<n>]',
    );
  const maxCachedWorkflows = cacheArg === undefined ? defaultMaxCachedWorkflows(heapLimitMiB()) : Number(cacheArg);
  if (!Number.isInteger(maxCachedWorkflows) || maxCachedWorkflows < 0)
    throw new Error(`${CACHE_FLAG}: a whole number, not '${cacheArg ?? ''}'`);
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const connection = await NativeConnection.connect({ address });
  const worker = await Worker.create({
    connection,
    namespace,
    taskQueue,
    workflowBundle: { codePath: bundle },
    activities: createBaselineActivities(new Map(), firedFile),
    maxCachedWorkflows,
  });
  const stop = () => worker.shutdown();
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  const running = worker.run();
  // The bench checks these against the watcher worker's (watcher-processes.ts).
  const bounds = { maxCachedWorkflows, heapLimitMiB: Math.round(heapLimitMiB()) };
  process.stdout.write(`baseline worker running ${JSON.stringify(bounds)}\n`);
  await running;
  await connection.close();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
