#!/usr/bin/env bash
# bench-stack.sh measures what the stack adds to a request: the same load
# (cmd/bench) against a bare net/http server that streams the same tokens
# (bench baseline), then against a frontend with two mocker workers at a
# very high speedup ratio (so the simulated engine takes ~no time), in one
# run on this machine. File discovery and the TCP request plane: no etcd or
# NATS needed.
#
# Usage: scripts/bench-stack.sh [RATE] [REQUESTS]   (default 500 req/s, 5000)
# FRONTEND_PPROF / MOCKER_PPROF: serve that process's Go profiles there.
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${1:-500}
REQUESTS=${2:-5000}
OUT=${OUT:-bench-out}
mkdir -p bin "$OUT"
go build -o bin/frontend ./cmd/frontend
go build -o bin/mocker ./cmd/mocker
go build -o bin/bench ./cmd/bench

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

wait_http() { # url
  for _ in $(seq 1 200); do
    if curl -fsS "$1" >/dev/null 2>&1; then return 0; fi
    sleep 0.05
  done
  echo "bench-stack: $1 did not come up" >&2
  return 1
}

export DYN_FILE_KV="$work/kv" DYN_LOG=warn
bin/bench baseline --addr 127.0.0.1:8100 >"$work/baseline.log" 2>&1 &
pids+=($!)
DYN_PPROF_ADDR=${MOCKER_PPROF:-} bin/mocker --model-path models/demo --num-workers 2 --speedup-ratio 100000 --discovery-backend file >"$work/mocker.log" 2>&1 &
mocker=$!
pids+=($mocker)
DYN_PPROF_ADDR=${FRONTEND_PPROF:-} DYN_HTTP_GRACEFUL_SHUTDOWN_TIMEOUT_SECS=0 bin/frontend --http-host 127.0.0.1 --http-port 8200 --discovery-backend file >"$work/frontend.log" 2>&1 &
frontend=$!
pids+=($frontend)
wait_http http://127.0.0.1:8100/health
for _ in $(seq 1 200); do
  if curl -fsS http://127.0.0.1:8200/v1/models 2>/dev/null | grep -q '"demo"'; then break; fi
  sleep 0.05
done

common=(--model demo --rate "$RATE" --requests "$REQUESTS" --warmup 200 --isl 64 --osl 16 --api chat)
echo "== baseline: bare net/http server streaming the same tokens"
bin/bench run --url http://127.0.0.1:8100 "${common[@]}" --label baseline --json "$OUT/baseline.json" >"$OUT/baseline.txt"
cat "$OUT/baseline.txt"
echo "== stack: frontend + two mocker workers"
bin/bench run --url http://127.0.0.1:8200 "${common[@]}" --label stack --watch-pid "$frontend,$mocker" --json "$OUT/stack.json" >"$OUT/stack.txt"
cat "$OUT/stack.txt"
echo "== stack minus baseline"
bin/bench compare "$OUT/baseline.json" "$OUT/stack.json"
