/**
 * The raw baseline's worker as a process of its own (scenario 4 reads its memory apart):
 * `node --import tsx bench/baseline/worker.ts <address> <namespace> <taskQueue> <bundle.js> [<fired file>]`; with a
 * fired file, each firing of the timer scenario is appended to it (scenario 3 with its workers in processes).
 */
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { createBaselineActivities } from './activities.js';

async function main(): Promise<void> {
  const [address, namespace, taskQueue, bundle, firedFile] = process.argv.slice(2);
  if (!address || !namespace || !taskQueue || !bundle)
    throw new Error('usage: worker.ts <address> <namespace> <taskQueue> <bundle.js>');
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const connection = await NativeConnection.connect({ address });
  const worker = await Worker.create({
    connection,
    namespace,
    taskQueue,
    workflowBundle: { codePath: bundle },
    activities: createBaselineActivities(new Map(), firedFile),
  });
  const stop = () => worker.shutdown();
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  const running = worker.run();
  process.stdout.write('baseline worker running\n');
  await running;
  await connection.close();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
