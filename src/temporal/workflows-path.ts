import { fileURLToPath } from 'node:url';

/** The workflows module a worker bundles (workflows/index.ts). */
export const workflowsPath = fileURLToPath(new URL('../../workflows/index.ts', import.meta.url));
