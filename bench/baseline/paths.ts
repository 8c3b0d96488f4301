import { fileURLToPath } from 'node:url';

/** The baseline workflows module (bundled apart from workflows/index.ts). */
export const baselineWorkflowsPath = fileURLToPath(new URL('./workflows.ts', import.meta.url));
