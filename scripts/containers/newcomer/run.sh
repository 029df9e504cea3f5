# Starts PostgreSQL and Redis on their standard ports (as the machine's services would be), then, as
# the ordinary user, copies the clone mounted at /src and runs the README's commands' second half,
# `npm ci && npm test`, over the test files a newcomer's machine changes: every file that needs a
# tool beyond Node, PostgreSQL and Redis (each such test must say it did not run, and the rest of
# its file pass without the tool), `npm start` as a newcomer runs it, and the units beside the code.
# The whole suite runs on CI's own clone; run twice, it only doubled CI's time and its exposure to
# a slow machine. Its exit status is the container's.
set -euo pipefail
pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start
redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save '' --appendonly no --dir /tmp >/dev/null
cp -r /src /home/newcomer/roster
chown -R newcomer: /home/newcomer/roster
cd /home/newcomer/roster
files=$(grep -rl --include='*.test.ts' -e 'lacking(' -e 'describeNeeding(' -e 'missingNeeds(' apps packages scripts deploy | sort | tr '\n' ' ')
exec su newcomer -c "cd ~/roster && npm ci --no-audit --no-fund --loglevel=error && npm test -- $files scripts/start.test.ts packages/*/src apps/*/src"
