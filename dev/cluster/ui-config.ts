/**
 * The UI server's configuration: it reads `<root>/config/base.yaml` and `<root>/config/<env>.yaml`; we write the
 * second (env `cluster`) at every start, pointed at the cluster's frontend.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { toYaml } from './server-config.js';

export interface UiConfigInput {
  frontend: string;
  port: number;
  namespace: string;
  /** Where a browser reaches the UI (its CORS origin). */
  url: string;
}

/** Writes the configuration under `root` and returns `root`, for `--root`. */
export function writeUiConfig(root: string, input: UiConfigInput): string {
  const dir = path.join(root, 'config');
  mkdirSync(dir, { recursive: true });
  const config = {
    temporalGrpcAddress: input.frontend,
    host: '127.0.0.1',
    port: input.port,
    enableUi: true,
    defaultNamespace: input.namespace,
    notifyOnNewVersion: false,
    // Plain HTTP on the loopback: the CSRF cookie cannot be Secure there.
    cors: { cookieInsecure: true, allowOrigins: [input.url] },
    auth: { enabled: false },
  };
  writeFileSync(path.join(dir, 'base.yaml'), '# Written by expectations-watcher (dev/cluster).\n');
  writeFileSync(
    path.join(dir, 'cluster.yaml'),
    `# Written by expectations-watcher (dev/cluster) at every start.\n${toYaml(config)}`,
  );
  return root;
}
