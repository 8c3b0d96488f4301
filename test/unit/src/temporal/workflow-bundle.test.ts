/** Where a worker with tracing on finds the tracing bundle that `npm run bundle` wrote beside its own. */
import { describe, expect, it } from 'vitest';
import { tracingBundleOf } from '../../../../src/temporal/workflow-bundle.js';

describe('tracingBundleOf', () => {
  it('puts .tracing before the .js of the bundle', () => {
    expect(tracingBundleOf('/app/dist/workflow-bundle.js')).toBe('/app/dist/workflow-bundle.tracing.js');
  });

  it('appends .tracing.js to a name without .js', () => {
    expect(tracingBundleOf('dist/bundle')).toBe('dist/bundle.tracing.js');
  });

  it('keeps a tracing bundle named directly as it is', () => {
    expect(tracingBundleOf('/app/dist/workflow-bundle.tracing.js')).toBe('/app/dist/workflow-bundle.tracing.js');
  });
});
