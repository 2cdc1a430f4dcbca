#!/usr/bin/env bash
# Starts the hello greeter and calls it from a second process, on this
# machine only: file discovery in a temporary directory, TCP request plane.
set -euo pipefail
cd "$(dirname "$0")/.."
kv=$(mktemp -d)
export DYN_FILE_KV="$kv" DYN_TCP_RPC_HOST=127.0.0.1 DYN_DISCOVERY_BACKEND=file DYN_REQUEST_PLANE=tcp DYN_GRACEFUL_SHUTDOWN_GRACE_PERIOD_SECS=0
bin/hello serve &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$kv"' EXIT
bin/hello call "${NAME:-world}"
