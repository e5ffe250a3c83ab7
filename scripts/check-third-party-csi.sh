#!/bin/sh
# Opt-in: runs `kube-provisioner run csi` against a third-party CSI plugin binary with the embedded cluster and
# prints one PASS/FAIL/SKIP line per behaviour (docs/csi.md, "Checking a third-party plugin").
#   scripts/check-third-party-csi.sh /path/to/hostpathplugin
#   scripts/check-third-party-csi.sh /path/to/plugin -- --endpoint={endpoint} --nodeid={node} ...
# The plugin must serve its controller and node services on one socket; {endpoint}, {node} and {dir} in its
# arguments are replaced. Needs no network; the plugin may need root (hostpathplugin mounts nothing here).
set -eu
if [ $# -lt 1 ] || [ ! -x "$1" ]; then
  echo "usage: $0 PLUGIN-BINARY [-- PLUGIN-ARGS...]" >&2
  exit 2
fi
cd "$(dirname "$0")/.."
exec node --conditions=kube-provisioner:source --import tsx scripts/check-third-party-csi.ts "$@"
