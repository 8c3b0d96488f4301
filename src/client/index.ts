/**
 * `expectations-watcher/client`: what an agent author or an operator needs to talk to the watcher's bridge, and
 * nothing of Temporal or Express (at run time it loads zod and the extension's schemas only).
 */
export { EXTENSION_URI } from '../../core/schemas/extension.js';
export {
  artifactUpdateEvent,
  expectation,
  extensionPayload,
  fact,
  withdrawList,
  withExtension,
  type ExtensionPayload,
  type ExtensionPayloadInput,
} from './builders.js';
export { WatcherProblemError, WatcherValidationError, type ProblemRequest } from './errors.js';
export { knownLapseKind, lapseOf, type WithMetadata } from './lapse-task.js';
export type * from './types.js';
export { type RetryOptions } from './retry.js';
export { WatcherClient, type CallOptions, type WatcherClientOptions } from './watcher-client.js';
