// Loaded by `node --import` before tsx (see package.json's scripts): from Node's first line of JavaScript until
// src/lifecycle.ts takes over, a SIGINT or SIGTERM is remembered here instead of killing the process with 143.
// Plain JavaScript on purpose: tsx's own start-up (esbuild) is the slowest part of the window this closes.
const early = { signal: undefined, remove: () => {} };
const remember = (signal) => {
  early.signal ??= signal;
};
process.on('SIGINT', remember);
process.on('SIGTERM', remember);
early.remove = () => {
  process.off('SIGINT', remember);
  process.off('SIGTERM', remember);
};
globalThis[Symbol.for('expectations-watcher.early-signals')] = early;
