# The watcher's image: one image, two processes (docs/operations.md).
#   npm run bridge   the HTTP bridge on PORT (the default command)
#   npm run worker   the Temporal worker; it bundles workflows/ at start, so the image ships their sources
# Both run TypeScript through tsx, which is a runtime dependency, so the production install is all they need.
FROM node:20-bookworm-slim

ENV NODE_ENV=production \
    NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false \
    NPM_CONFIG_AUDIT=false

WORKDIR /app

# Dependencies first, so that a source change reuses this layer. Native parts (Temporal's core bridge, swc, esbuild)
# come as prebuilt packages for the build platform.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev && npm cache clean --force

# Everything the entry points import (test/unit/compose.test.ts follows the imports and checks this list).
COPY tsconfig.json ./
COPY core ./core
COPY src ./src
COPY workflows ./workflows
COPY activities ./activities

# The code stays root's; the process writes only its data directory (principals generated when
# WATCHER_PRINCIPALS_FILE is unset) and the temp directory.
RUN mkdir -p /app/.data && chown node:node /app/.data
USER node

EXPOSE 3000
CMD ["npm", "run", "bridge"]
