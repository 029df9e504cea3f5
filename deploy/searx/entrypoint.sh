#!/bin/sh
# Writes the settings (unless a file of the operator's is mounted there) with the secret from
# SEARX_SECRET, else one made now: searx refuses to start with its example's secret.
set -eu
if [ ! -f "$SEARX_SETTINGS_PATH" ]; then
  secret=${SEARX_SECRET:-$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')}
  sed "s/@SECRET@/$secret/" /etc/searx/settings.template.yml >"$SEARX_SETTINGS_PATH"
fi
exec python3 -m searx.webapp
