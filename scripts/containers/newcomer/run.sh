# Starts PostgreSQL and Redis on their standard ports (as the machine's services would be), then, as
# the ordinary user, copies the clone mounted at /src and runs the README's two commands' second
# half: `npm ci && npm test`. Its exit status is the container's.
set -euo pipefail
pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start
redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save '' --appendonly no --dir /tmp >/dev/null
cp -r /src /home/newcomer/roster
chown -R newcomer: /home/newcomer/roster
exec su newcomer -c 'cd ~/roster && npm ci --no-audit --no-fund --loglevel=error && npm test'
