# One image for every Roster process (API, worker, runtime host, migrations, admin CLI, upstream
# simulator); the command picks the process. The base image is a build argument, so a machine
# without a registry can build from a local Node 20 image:
#   docker build -t roster:local .                                          (official node:20 image)
#   docker build --build-arg BASE_IMAGE=roster-local/node:20 -t roster:local .
ARG BASE_IMAGE=node:20-bookworm-slim
FROM ${BASE_IMAGE}

# bubblewrap confines interns' shell commands (the runtime host refuses them, saying why, where it
# cannot work); socat forwards a sandboxed command's network to its egress proxy. The rest is what an
# agent reaches for in its shell: git, curl, python3, jq, ripgrep, a C toolchain and make (the
# docs/containers.md lists them).
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends bubblewrap socat ca-certificates \
      git curl python3 jq ripgrep gcc libc6-dev make xz-utils unzip procps less >/dev/null \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
# Dependencies first (their layer is reused until the lockfile or a package manifest changes). Every
# workspace's manifest, or `npm ci` leaves that workspace's dependencies out (scripts/dockerfile.test.ts).
COPY package.json package-lock.json ./
COPY apps/api/package.json apps/api/
COPY apps/cli/package.json apps/cli/
COPY apps/console/package.json apps/console/
COPY apps/runtime/package.json apps/runtime/
COPY apps/worker/package.json apps/worker/
COPY packages/gateway/package.json packages/gateway/
COPY packages/platform/package.json packages/platform/
COPY packages/protocol/package.json packages/protocol/
COPY packages/shared/package.json packages/shared/
COPY packages/slack-sim/package.json packages/slack-sim/
COPY packages/testing/package.json packages/testing/
COPY packages/testcontainers/package.json packages/testcontainers/
COPY packages/upstream-sim/package.json packages/upstream-sim/
RUN npm ci --no-audit --no-fund --loglevel=error

COPY turbo.json tsconfig.base.json prisma.config.ts ./
COPY prisma ./prisma
COPY scripts ./scripts
COPY packages ./packages
COPY apps ./apps
COPY deploy ./deploy
RUN npm run -s build

# Not root: the runtime host's interns run their commands as this user (in their sandboxes).
RUN useradd --uid 10001 --create-home --shell /usr/sbin/nologin roster \
 && mkdir -p /data && chown roster /data
USER roster
ENV NODE_ENV=production HOST=0.0.0.0 RUNTIME_DATA_DIR=/data
EXPOSE 3000 3100
CMD ["node", "--no-allocation-site-pretenuring", "apps/api/dist/main.js"]
