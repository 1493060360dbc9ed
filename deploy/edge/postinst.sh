#!/bin/sh
# bowline-edge postinst: create the service user, let it read its
# certificates, and (re)start the agent if the gateway is provisioned.
set -e
if command -v systemd-sysusers >/dev/null 2>&1; then
  systemd-sysusers /usr/lib/sysusers.d/bowline-edge.conf
fi
chown root:bowline-edge /etc/bowline-edge/certs
chmod 0750 /etc/bowline-edge/certs
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload
  systemctl enable bowline-edge.service >/dev/null
  if [ -f /etc/bowline-edge/identity.env ]; then
    systemctl restart bowline-edge.service
  fi
fi
