#!/bin/bash
# The postgres-replica service: a streaming replica (hot standby) of the postgres service, made by
# pg_basebackup the first time its data directory is empty, then run as the server it is. Roster's
# API reads analytics, generations and the audit log from it (DATABASE_READ_URL). Runs with either
# the official postgres image or the local stand-in (same paths, the server binaries on PATH).
set -Eeo pipefail
: "${PGDATA:=/var/lib/postgresql/data}"
: "${PRIMARY_HOST:=postgres}"
mkdir -p "$PGDATA" /var/run/postgresql
chown postgres:postgres "$PGDATA" /var/run/postgresql
chmod 700 "$PGDATA"
as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  # The primary may still be initializing (its first start runs its init scripts on a socket only).
  until as_postgres pg_basebackup -h "$PRIMARY_HOST" -U postgres -D "$PGDATA" -R -X stream -c fast; do
    echo "waiting for the primary at $PRIMARY_HOST to take a base backup"
    find "$PGDATA" -mindepth 1 -delete
    sleep 1
  done
fi
exec setpriv --reuid=postgres --regid=postgres --init-groups postgres -c hot_standby=on -c "listen_addresses=*"
