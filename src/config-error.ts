/**
 * The error of a bad configuration, in a module of its own so that the readers src/config.ts composes (e.g.
 * src/temporal/connection-settings.ts) can throw it without importing config.ts back.
 */

/** Thrown when the environment is invalid; the message names each bad variable (or file) and its rule. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}
