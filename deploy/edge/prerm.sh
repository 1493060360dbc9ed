#!/bin/sh
# bowline-edge prerm: stop the agent before its files go away. The outbox in
# /var/lib/bowline-edge stays: it may hold readings not yet delivered.
set -e
if [ -d /run/systemd/system ]; then
  systemctl stop bowline-edge.service || true
  if [ "$1" = remove ]; then
    systemctl disable bowline-edge.service >/dev/null || true
  fi
fi
