# Plaza's container image. Two stages: the build stage has the TypeScript toolchain and compiles;
# the runtime stage installs production dependencies only and copies the compiled output.
# scripts/ci-production-path.sh runs these same steps outside Docker in CI (see docs/operations.md).
ARG NODE_VERSION=24

FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
# Only what the service's own code needs: tsconfig.build.json leaves the tests out (they import test/).
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build:image

FROM node:${NODE_VERSION}-bookworm-slim AS runtime
# The official images' convention; Plaza itself reads no NODE_ENV (its settings are its own variables).
# The heap limit: docs/operations.md, "Memory". METRICS_PORT set: a taken port stops the start
# instead of moving where nothing scrapes (docs/operations.md, "Health, logs, shutdown").
ENV NODE_ENV=production \
    NODE_OPTIONS=--max-old-space-size=2000 \
    DATA_DIR=/data \
    PORT=3000 \
    METRICS_PORT=9464 \
    LOG_FORMAT=json
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY bin ./bin
COPY migrations ./migrations
# The portal's stylesheet and script, served at /portal.
COPY public ./public
COPY --from=build /app/dist/src ./dist/src
# DATA_DIR holds generated keys (and the embedded database when DATABASE_URL is unset): owned by the
# unprivileged user the official images provide.
RUN mkdir -p /data && chown node:node /data && chmod 0700 /data && ln -s /app/bin/plaza.js /usr/local/bin/plaza
USER node
VOLUME ["/data"]
EXPOSE 3000
# Liveness of the HTTP API; a worker-only container (`serve --role worker`) has no port: disable the
# check for it (compose.yaml does).
HEALTHCHECK --interval=15s --timeout=3s --start-period=40s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT}/healthz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Node runs as PID 1 directly (not under npm, which does not pass signals on): Plaza handles SIGTERM
# and SIGINT itself and drains in-flight work before exiting.
STOPSIGNAL SIGTERM
CMD ["node", "--enable-source-maps", "bin/plaza.js", "serve"]
