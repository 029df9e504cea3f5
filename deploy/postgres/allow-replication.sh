#!/bin/bash
# Run once, when the primary's data directory is first made (/docker-entrypoint-initdb.d): lets the
# replica (postgres-replica) stream from it with the same password. A primary made before this file
# existed needs the same line added to its pg_hba.conf by hand (then `SELECT pg_reload_conf()`).
echo "host replication all all ${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}" >> "$PGDATA/pg_hba.conf"
