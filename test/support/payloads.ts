/**
 * A2A payloads the end-to-end tests send to the bridge, shared by the bridge and fault fixtures.
 */
import { randomUUID } from 'node:crypto';
import { EXTENSION_URI } from '../../src/schemas/extension.js';

/** A unique suffix for ids. */
export const unique = (): string => randomUUID().slice(0, 8);

/** The v1.0 push body of an artifact update carrying `payload` under metadata[URI]. */
export function artifactUpdate(payload: unknown, taskId = `task-${unique()}`, contextId = `ctx-${unique()}`) {
  return {
    artifactUpdate: {
      taskId,
      contextId,
      artifact: { artifactId: `a-${unique()}`, parts: [{ text: 'plan' }], metadata: { [EXTENSION_URI]: payload } },
    },
  };
}
