/**
 * `npm run provision`: makes sure both Temporal servers, the cluster's pieces (server, SQL tool and schema, UI,
 * PostgreSQL) and helm (for the chart's tests) are at hand, building or fetching them once, and says where.
 */
import { ensureClusterBinaries } from './provision-cluster.js';
import { ensureHelm } from './provision-helm.js';
import { ensureDevServer, ensureTestServer, ProvisionError } from './provision.js';

async function main(): Promise<void> {
  const started = Date.now();
  const dev = ensureDevServer({ allowDownload: process.env.CI !== 'true' });
  console.log(
    `dev server: ${dev.type === 'existing-path' ? `${dev.path} (${dev.origin})` : 'SDK download at first use'}`,
  );
  const test = await ensureTestServer({ allowDownload: process.env.CI !== 'true' });
  console.log(
    `test server: ${test.type === 'existing-path' ? `${test.path} (${test.origin})` : 'SDK download at first use'}`,
  );
  const cluster = ensureClusterBinaries();
  for (const [piece, found] of Object.entries(cluster))
    console.log(`cluster ${piece}: ${found.path} (${found.origin})`);
  const helm = ensureHelm();
  console.log(`helm: ${helm.path} (${helm.origin})`);
  console.log(`provisioned in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

main().catch((error: unknown) => {
  console.error(error instanceof ProvisionError ? `provision: ${error.message}` : error);
  process.exit(1);
});
