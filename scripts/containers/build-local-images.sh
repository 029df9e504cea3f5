#!/usr/bin/env bash
# A copy of the workplace's shared/containers/build-local-images.sh, so CI (a clean clone) has it.
# build-local-images.sh: build the container images Roster's container tests need, with no image registry.
#
# Needs: Debian bookworm host, root, the Debian mirror (apt) reachable, Node 20 on the host.
# Produces (all from Debian packages on a debootstrapped base, nothing pulled):
#   roster-local/debian:bookworm   minbase rootfs imported with `docker import`
#   roster-local/postgres:15       Debian postgresql-15; official-image env contract
#   roster-local/redis:7           Debian redis-server; protected-mode off like the official image
#   roster-local/node:20           the host's node binary + global npm/corepack + headers
#   roster-local/ryuk:node         Node stand-in for testcontainers/ryuk (same protocol)
# Optional: INSTALL_COMPOSE_V2=1 puts Debian trixie's docker-compose v2 (a plain Go binary,
# needs only libc >= 2.34) into $COMPOSE_PLUGIN_DIR as a `docker compose` CLI plugin.
#
# Env knobs: WORKDIR (default $TMPDIR/roster-local-images), FORCE=1 (rebuild existing images),
#   SKIP_APT=1, INSTALL_COMPOSE_V2=1, COMPOSE_PLUGIN_DIR, IMAGE_PREFIX (default roster-local).
set -Eeuo pipefail

WORKDIR=${WORKDIR:-${TMPDIR:-/tmp}/roster-local-images}
PREFIX=${IMAGE_PREFIX:-roster-local}
FORCE=${FORCE:-0}
COMPOSE_PLUGIN_DIR=${COMPOSE_PLUGIN_DIR:-/usr/local/lib/docker/cli-plugins}
TIMINGS="$WORKDIR/timings.txt"
export DEBIAN_FRONTEND=noninteractive

mkdir -p "$WORKDIR"
: > "$TIMINGS"
T0=$(date +%s.%N)
step() { # step NAME CMD... : run and record wall time
  local name=$1; shift
  local s; s=$(date +%s.%N)
  echo "==> $name"
  "$@"
  local d; d=$(awk -v a="$s" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
  printf '%-34s %6ss\n' "$name" "$d" | tee -a "$TIMINGS"
}
have_image() { [ "$FORCE" != 1 ] && docker image inspect "$1" >/dev/null 2>&1; }
dbuild() { # dbuild TAG DIR : docker build, log to a file, show its tail on failure
  local log="$WORKDIR/build-${1//[:\/]/_}.log"
  docker build -t "$1" "$2" >"$log" 2>&1 || { tail -30 "$log" >&2; return 1; }
  docker image inspect -f '{{.Id}}' "$1"
}

mirror_url() { # first Debian mirror from the host's apt config
  local u=""
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    u=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources)
  fi
  [ -z "$u" ] && [ -f /etc/apt/sources.list ] && u=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list)
  echo "${u:-http://deb.debian.org/debian}"
}
MIRROR=$(mirror_url)
SECURITY_MIRROR=${MIRROR%/debian}/debian-security

# ---------------------------------------------------------------- host packages + dockerd
install_host_packages() {
  apt-get update -qq
  apt-get install -y -qq docker.io debootstrap >/dev/null
}
start_dockerd() {
  if docker info >/dev/null 2>&1; then echo "dockerd already running"; return; fi
  if [ -d /run/systemd/system ]; then
    systemctl start docker
  else
    nohup dockerd >/var/log/dockerd.log 2>&1 &
  fi
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && return; sleep 0.5; done
  echo "dockerd did not come up; see /var/log/dockerd.log" >&2; return 1
}

# ---------------------------------------------------------------- base image
build_base() {
  if have_image "$PREFIX/debian:bookworm"; then echo "exists"; return; fi
  local rootfs="$WORKDIR/rootfs"
  rm -rf "$rootfs"
  debootstrap --variant=minbase bookworm "$rootfs" "$MIRROR" >"$WORKDIR/debootstrap.log" 2>&1 \
    || { tail -20 "$WORKDIR/debootstrap.log" >&2; return 1; }
  rm -f "$rootfs/etc/apt/sources.list"
  cat >"$rootfs/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $SECURITY_MIRROR
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  # no init system in containers: maintainer scripts must not start services
  printf '#!/bin/sh\nexit 101\n' >"$rootfs/usr/sbin/policy-rc.d"; chmod 755 "$rootfs/usr/sbin/policy-rc.d"
  cat >"$rootfs/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache ""; Dir::Cache::srcpkgcache "";
EOF
  printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' \
    >"$rootfs/etc/apt/apt.conf.d/docker-norecommends"
  chroot "$rootfs" apt-get clean
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin
  tar -C "$rootfs" -c . | docker import -c 'ENV LANG=C.UTF-8' -c 'CMD ["bash"]' - "$PREFIX/debian:bookworm" >/dev/null
  rm -rf "$rootfs"
}

# ---------------------------------------------------------------- postgres
build_postgres() {
  if have_image "$PREFIX/postgres:15"; then echo "exists"; return; fi
  local d="$WORKDIR/images/postgres"; mkdir -p "$d"
  cat >"$d/Dockerfile" <<EOF
FROM $PREFIX/debian:bookworm
RUN set -eux; \\
    mkdir -p /etc/postgresql-common; \\
    echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.conf; \\
    apt-get update; \\
    apt-get install -y --no-install-recommends postgresql-15; \\
    rm -rf /var/lib/apt/lists/*; \\
    mkdir -p /var/run/postgresql /var/lib/postgresql/data /docker-entrypoint-initdb.d; \\
    chown -R postgres:postgres /var/run/postgresql /var/lib/postgresql; \\
    chmod 3777 /var/run/postgresql
ENV PATH=/usr/lib/postgresql/15/bin:\$PATH \\
    PGDATA=/var/lib/postgresql/data
VOLUME /var/lib/postgresql/data
COPY docker-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]
STOPSIGNAL SIGINT
EXPOSE 5432
CMD ["postgres"]
EOF
  cat >"$d/docker-entrypoint.sh" <<'EOF'
#!/bin/bash
# Minimal re-implementation of the official postgres image's entrypoint contract:
# POSTGRES_USER (postgres), POSTGRES_PASSWORD, POSTGRES_DB ($POSTGRES_USER),
# POSTGRES_HOST_AUTH_METHOD (scram-sha-256 with a password, else trust),
# POSTGRES_INITDB_ARGS, /docker-entrypoint-initdb.d/*.sh|*.sql|*.sql.gz
set -Eeo pipefail
if [ "${1:0:1}" = '-' ]; then set -- postgres "$@"; fi

if [ "$1" = 'postgres' ] && [ "$(id -u)" = '0' ]; then
    mkdir -p "$PGDATA" /var/run/postgresql
    chown postgres:postgres "$PGDATA" /var/run/postgresql
    chmod 700 "$PGDATA"
    exec setpriv --reuid=postgres --regid=postgres --init-groups "$BASH_SOURCE" "$@"
fi

if [ "$1" = 'postgres' ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
    : "${POSTGRES_USER:=postgres}"
    : "${POSTGRES_DB:=$POSTGRES_USER}"
    if [ -z "${POSTGRES_HOST_AUTH_METHOD:-}" ]; then
        if [ -n "${POSTGRES_PASSWORD:-}" ]; then POSTGRES_HOST_AUTH_METHOD=scram-sha-256
        else POSTGRES_HOST_AUTH_METHOD=trust; fi   # the official image refuses instead
    fi
    pwargs=()
    if [ -n "${POSTGRES_PASSWORD:-}" ]; then
        pwfile="$(mktemp)"; printf '%s' "$POSTGRES_PASSWORD" > "$pwfile"; pwargs=(--pwfile="$pwfile")
    fi
    initdb --username="$POSTGRES_USER" "${pwargs[@]}" --encoding=UTF8 --locale=C.UTF-8 \
        --auth-local=trust --auth-host="$POSTGRES_HOST_AUTH_METHOD" ${POSTGRES_INITDB_ARGS:-}
    [ -n "${pwfile:-}" ] && rm -f "$pwfile"
    echo "host all all all $POSTGRES_HOST_AUTH_METHOD" >> "$PGDATA/pg_hba.conf"
    echo "listen_addresses = '*'" >> "$PGDATA/postgresql.conf"

    if [ -n "$(ls -A /docker-entrypoint-initdb.d 2>/dev/null)" ]; then
        # temporary server on the unix socket only, as the official image does
        pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -p 5432" -w start
        psql=(psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --no-password --no-psqlrc)
        if [ "$POSTGRES_DB" != 'postgres' ]; then
            "${psql[@]}" --dbname postgres --set db="$POSTGRES_DB" <<<'CREATE DATABASE :"db";'
        fi
        for f in /docker-entrypoint-initdb.d/*; do
            case "$f" in
                *.sh)     echo "running $f"; . "$f" ;;
                *.sql)    echo "running $f"; "${psql[@]}" --dbname "$POSTGRES_DB" -f "$f" ;;
                *.sql.gz) echo "running $f"; gunzip -c "$f" | "${psql[@]}" --dbname "$POSTGRES_DB" ;;
                *)        echo "ignoring $f" ;;
            esac
        done
        pg_ctl -D "$PGDATA" -m fast -w stop
    elif [ "$POSTGRES_DB" != 'postgres' ]; then
        # no init scripts: create the database in single-user mode (opens no socket)
        printf 'CREATE DATABASE "%s";\n' "${POSTGRES_DB//\"/\"\"}" \
            | postgres --single -j -D "$PGDATA" postgres >/dev/null
    fi
    echo 'PostgreSQL init process complete; ready for start up.'
fi
exec "$@"
EOF
  chmod 755 "$d/docker-entrypoint.sh"
  dbuild "$PREFIX/postgres:15" "$d"
}

# ---------------------------------------------------------------- redis
build_redis() {
  if have_image "$PREFIX/redis:7"; then echo "exists"; return; fi
  local d="$WORKDIR/images/redis"; mkdir -p "$d"
  cat >"$d/Dockerfile" <<EOF
FROM $PREFIX/debian:bookworm
RUN set -eux; \\
    apt-get update; \\
    apt-get install -y --no-install-recommends redis-server; \\
    rm -rf /var/lib/apt/lists/*; \\
    mkdir -p /data; chown redis:redis /data
WORKDIR /data
VOLUME /data
COPY docker-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]
EXPOSE 6379
CMD ["redis-server"]
EOF
  cat >"$d/docker-entrypoint.sh" <<'EOF'
#!/bin/sh
# Like the official redis image: a bare `redis-server` listens on all interfaces with
# protected mode OFF (the official image patches that default at build time).
set -e
if [ "${1#-}" != "$1" ] || [ "${1%.conf}" != "$1" ]; then set -- redis-server "$@"; fi
if [ "$1" = 'redis-server' ]; then
    case " $* " in *"--protected-mode "*) ;; *) set -- "$@" --protected-mode no ;; esac
    if [ "$(id -u)" = '0' ]; then
        find . \! -user redis -exec chown redis '{}' + 2>/dev/null || true
        exec setpriv --reuid=redis --regid=redis --init-groups "$@"
    fi
fi
exec "$@"
EOF
  chmod 755 "$d/docker-entrypoint.sh"
  dbuild "$PREFIX/redis:7" "$d"
}

# ---------------------------------------------------------------- node (host's node)
build_node() {
  if have_image "$PREFIX/node:20"; then echo "exists"; return; fi
  command -v node >/dev/null || { echo "no node on the host" >&2; return 1; }
  local d="$WORKDIR/images/node"; mkdir -p "$d/extra-ca"
  local nodebin; nodebin=$(readlink -f "$(command -v node)")
  local prefix; prefix=$(dirname "$(dirname "$nodebin")")   # /usr for the nodesource .deb
  [ "$prefix" = /usr ] || { echo "expected node under /usr, got $nodebin" >&2; return 1; }
  tar -C / -cf "$d/node-dist.tar" usr/bin/node usr/bin/npm usr/bin/npx \
      $( [ -e /usr/bin/corepack ] && echo usr/bin/corepack usr/lib/node_modules/corepack ) \
      usr/lib/node_modules/npm usr/include/node
  # local CAs of the host (e.g. a TLS-intercepting egress proxy), so npm works inside too
  cp /usr/local/share/ca-certificates/*.crt "$d/extra-ca/" 2>/dev/null || true
  cat >"$d/Dockerfile" <<EOF
FROM $PREFIX/debian:bookworm
COPY extra-ca/ /usr/local/share/ca-certificates/
RUN set -eux; \\
    apt-get update; \\
    apt-get install -y --no-install-recommends ca-certificates; \\
    rm -rf /var/lib/apt/lists/*; \\
    update-ca-certificates
ADD node-dist.tar /
RUN printf 'cafile=/etc/ssl/certs/ca-certificates.crt\nnodedir=/usr\nupdate-notifier=false\nfund=false\n' > /usr/etc/npmrc; \\
    node --version && npm --version
ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
CMD ["node"]
EOF
  dbuild "$PREFIX/node:20" "$d"
  rm -f "$d/node-dist.tar"
}

# ---------------------------------------------------------------- ryuk stand-in
build_ryuk() {
  if have_image "$PREFIX/ryuk:node"; then echo "exists"; return; fi
  local d="$WORKDIR/images/ryuk"; mkdir -p "$d"
  cat >"$d/ryuk.js" <<'EOF'
// Minimal stand-in for testcontainers/ryuk (moby-ryuk protocol), no dependencies.
// TCP :8080; each line "label=k=v[&label=k2=v2]" registers a filter and is ACKed.
// When all clients are gone and none reconnects within RYUK_RECONNECTION_TIMEOUT
// (10s), or nobody connects within RYUK_CONNECTION_TIMEOUT (60s), it removes the
// matching containers, networks, volumes and images via the docker socket, then exits.
'use strict';
const net = require('net'), http = require('http'), os = require('os');
const SOCK = '/var/run/docker.sock', PORT = Number(process.env.RYUK_PORT || 8080);
const ms = (v, d) => (v ? parseFloat(v) * (/ms$/.test(v) ? 0.001 : /m$/.test(v) ? 60 : 1) : d) * 1000;
const RECONNECT_MS = ms(process.env.RYUK_RECONNECTION_TIMEOUT, 10);
const CONNECT_MS = ms(process.env.RYUK_CONNECTION_TIMEOUT, 60);
const verbose = process.env.RYUK_VERBOSE === 'true', selfId = os.hostname();
const filters = new Set();
let clients = 0, timer = setTimeout(() => reap('no connection'), CONNECT_MS);
const parse = (s) => { try { return JSON.parse(s); } catch { return s; } };
const api = (method, path) => new Promise((resolve, reject) => {
  const req = http.request({ socketPath: SOCK, method, path }, (res) => {
    let b = ''; res.on('data', (c) => (b += c));
    res.on('end', () => resolve({ status: res.statusCode, body: b ? parse(b) : null }));
  });
  req.on('error', reject); req.end();
});
function parseLine(line) {
  const f = {};
  for (const part of line.split('&')) {
    const i = part.indexOf('='); if (i <= 0) continue;
    (f[decodeURIComponent(part.slice(0, i))] ||= []).push(decodeURIComponent(part.slice(i + 1)));
  }
  return Object.keys(f).length ? f : null;
}
async function reap(why) {
  console.log(`Reaping (${why}) with ${filters.size} filter(s)`);
  const n = { containers: 0, networks: 0, volumes: 0, images: 0 };
  for (const fj of filters) {
    const q = encodeURIComponent(fj);
    try {
      for (const c of (await api('GET', `/containers/json?all=1&filters=${q}`)).body || []) {
        if (c.Id.startsWith(selfId)) continue;
        const r = await api('DELETE', `/containers/${c.Id}?force=1&v=1`);
        if (r.status < 300 || r.status === 404) n.containers++;
      }
      for (const x of (await api('GET', `/networks?filters=${q}`)).body || [])
        if ((await api('DELETE', `/networks/${x.Id}`)).status < 300) n.networks++;
      for (const v of ((await api('GET', `/volumes?filters=${q}`)).body || {}).Volumes || [])
        if ((await api('DELETE', `/volumes/${encodeURIComponent(v.Name)}`)).status < 300) n.volumes++;
      for (const img of (await api('GET', `/images/json?filters=${q}`)).body || [])
        if ((await api('DELETE', `/images/${img.Id}?force=1`)).status < 300) n.images++;
    } catch (e) { console.error('reap error', e.message); }
  }
  console.log(`Removed ${JSON.stringify(n)}`);
  process.exit(0);
}
net.createServer((sock) => {
  clients++; clearTimeout(timer);
  let buf = '';
  sock.on('data', (d) => {
    buf += d; let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i).replace(/\r$/, '').trim(); buf = buf.slice(i + 1);
      if (!line) continue;
      const f = parseLine(line);
      if (f) { filters.add(JSON.stringify(f)); sock.write('ACK\n'); if (verbose) console.log('filter', line); }
      else sock.write('ERROR\n');
    }
  });
  sock.on('error', () => {});
  sock.on('close', () => {
    if (--clients === 0) timer = setTimeout(() => reap('all clients gone'), RECONNECT_MS);
  });
}).listen(PORT, () => console.log(`Started ryuk-node on :${PORT}`));
process.on('SIGTERM', () => process.exit(0));
EOF
  cat >"$d/Dockerfile" <<EOF
FROM $PREFIX/node:20
COPY ryuk.js /ryuk.js
# testcontainers finds a reusable reaper by this label (the real ryuk image carries it)
LABEL org.testcontainers.ryuk=true
EXPOSE 8080
CMD ["node", "/ryuk.js"]
EOF
  dbuild "$PREFIX/ryuk:node" "$d"
}

# ---------------------------------------------------------------- compose v2 (optional)
install_compose_v2() {
  if [ -x "$COMPOSE_PLUGIN_DIR/docker-compose" ]; then echo "exists"; return; fi
  local a="$WORKDIR/apt-trixie"; mkdir -p "$a/etc" "$a/lists/partial" "$a/cache" "$a/deb"
  cat >"$a/etc/trixie.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  # isolated apt state: the host's own sources and lists are left untouched
  local O=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$a/etc"
           -o "Dir::State::Lists=$a/lists" -o "Dir::Cache=$a/cache")
  apt-get "${O[@]}" update -qq
  (cd "$a/deb" && apt-get "${O[@]}" download docker-compose 2>&1 | grep -v unsandboxed || true)
  dpkg-deb -x "$a/deb"/docker-compose_2*.deb "$a/x"
  mkdir -p "$COMPOSE_PLUGIN_DIR"
  install -m 755 "$a/x/usr/libexec/docker/cli-plugins/docker-compose" "$COMPOSE_PLUGIN_DIR/"
  rm -rf "$a"
}

# ---------------------------------------------------------------- smoke test
smoke() {
  local pg redis pport rport ok=1
  pg=$(docker run -d --rm -e POSTGRES_PASSWORD=smoke -p 127.0.0.1::5432 "$PREFIX/postgres:15")
  redis=$(docker run -d --rm -p 127.0.0.1::6379 "$PREFIX/redis:7")
  pport=$(docker port "$pg" 5432/tcp | head -1 | sed 's/.*://')
  rport=$(docker port "$redis" 6379/tcp | head -1 | sed 's/.*://')
  for _ in $(seq 1 100); do
    docker exec "$pg" pg_isready -q -h localhost 2>/dev/null && break; sleep 0.2
  done
  if command -v psql >/dev/null; then   # from the host, through the published port
    PGPASSWORD=smoke psql -h 127.0.0.1 -p "$pport" -U postgres -Atc 'select version()'
  else docker exec "$pg" psql -U postgres -Atc 'select version()'; fi \
    | grep -q 'PostgreSQL 15' && echo "postgres OK (127.0.0.1:$pport)" || ok=0
  for _ in $(seq 1 50); do docker exec "$redis" redis-cli ping 2>/dev/null | grep -q PONG && break; sleep 0.1; done
  if command -v redis-cli >/dev/null; then redis-cli -h 127.0.0.1 -p "$rport" ping
  else docker exec "$redis" redis-cli ping; fi | grep -q PONG && echo "redis OK (127.0.0.1:$rport)" || ok=0
  docker run --rm "$PREFIX/node:20" node -e 'console.log("node", process.version)' || ok=0
  docker rm -fv "$pg" "$redis" >/dev/null   # -v: drop the anonymous VOLUMEs too
  [ "$ok" = 1 ]
}

[ "${SKIP_APT:-0}" = 1 ] || step "apt-get install docker.io debootstrap" install_host_packages
step "start dockerd"                 start_dockerd
step "debootstrap + docker import"   build_base
step "build postgres:15"             build_postgres
step "build redis:7"                 build_redis
step "build node:20"                 build_node
step "build ryuk:node"               build_ryuk
if [ "${INSTALL_COMPOSE_V2:-0}" = 1 ]; then step "compose v2 plugin (trixie .deb)" install_compose_v2; fi
step "smoke test"                    smoke
printf '%-34s %6ss\n' "TOTAL" "$(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')" | tee -a "$TIMINGS"
docker images --format '{{.Repository}}:{{.Tag}}\t{{.Size}}' | grep "^$PREFIX/"
