/**
 * The workflows the watcher's worker registers; the exported names are the workflow types.
 */
export { expectationWorkflow } from './expectation.js';
export { factRouterWorkflow } from './fact-router.js';
