# The watcher's image: one image, two processes (docs/operations.md).
#   node --import ./src/early-signals.mjs --import tsx src/bridge.ts   the HTTP bridge on PORT (the default command)
#   node --import ./src/early-signals.mjs --import tsx src/worker.ts   the Temporal worker, on the workflow bundle built below
# node is PID 1's child (compose's `init: true`) with no npm in between, so SIGTERM reaches the process that drains.
# tsx, a runtime dependency, compiles the TypeScript as node loads it: the production install is all the image needs.
FROM node:24-bookworm-slim

ENV NODE_ENV=production \
    NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false \
    NPM_CONFIG_AUDIT=false

WORKDIR /app

# Dependencies first, so that a source change reuses this layer. Native parts (Temporal's core bridge, swc, esbuild)
# come as prebuilt packages for the build platform.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev && npm cache clean --force

# Everything the entry points import (test/unit/deploy/compose.test.ts follows the imports and checks this list).
COPY tsconfig.json ./
COPY core ./core
COPY src ./src
COPY workflows ./workflows
COPY activities ./activities

# The workflows, bundled once here (`npm run bundle`), so that a worker starts without webpack and every worker of
# one image runs the same code. The worker loads it because WATCHER_WORKFLOW_BUNDLE names it, or with tracing on the
# tracing bundle the same step writes beside it (workflow-bundle.tracing.js).
RUN node --import tsx src/temporal/bundle-cli.ts /app/dist/workflow-bundle.js
ENV WATCHER_WORKFLOW_BUNDLE=/app/dist/workflow-bundle.js

# The code and the bundle stay root's; the process writes only its data directory (principals generated when
# WATCHER_PRINCIPALS_FILE is unset) and the temp directory.
RUN mkdir -p /app/.data && chown node:node /app/.data
USER node

EXPOSE 3000
CMD ["node", "--import", "./src/early-signals.mjs", "--import", "tsx", "src/bridge.ts"]
