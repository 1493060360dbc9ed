#!/bin/sh
# bowline-edge postrm: forget the unit. Purge keeps the outbox on purpose;
# delete /var/lib/bowline-edge by hand once it is drained.
set -e
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload || true
fi
