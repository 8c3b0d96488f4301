/**
 * The embedded Temporal of `npm start` (dev/start.ts): the dev server with its SQLite file and log under the data
 * directory, its frontend on WATCHER_EMBEDDED_TEMPORAL_PORT and its UI 1000 above.
 */
import path from 'node:path';
import type { Config } from '../../src/config.js';
import type { Logger } from '../../src/logger.js';
import { startDevServer, type DevServer } from './dev-server.js';

/** Starts the embedded dev server with its SQLite file under the data directory. */
export async function startEmbeddedTemporal(config: Config, log: Logger): Promise<DevServer> {
  const dbFilename = path.join(config.dataDir, 'temporal.sqlite');
  log.info({ dbFilename }, 'starting the embedded Temporal dev server');
  return startDevServer({
    dbFilename,
    port: config.temporal.embeddedPort,
    uiPort: config.temporal.embeddedPort + 1000,
    logFile: path.join(config.dataDir, 'temporal.log'),
    log: (line) => log.info(line),
  });
}
