#!/usr/bin/env bash
# bench-streams.sh holds N concurrent streams through one frontend and
# reports what that costs it: the frontend's peak RSS (and per stream), its
# peak open files and CPU, and whether every stream completed. Closed loop:
# N clients, each sending one long streamed chat request (OSL tokens, real
# time unless SPEEDUP says otherwise) to a frontend in front of WORKERS
# mocker workers sized to hold all N sequences at once. File discovery and
# the TCP request plane: no etcd or NATS needed.
#
# Usage: scripts/bench-streams.sh [N] [OSL] [WORKERS]   (default 2000 400 4)
# The processes' logs are kept in OUT (streams-N-frontend.log, -mocker.log).
# Environment: SPEEDUP (mocker --speedup-ratio, default 1), OUT (bench-out),
# FRONTEND_PPROF (serve the frontend's Go profiles there, e.g. 127.0.0.1:6061).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-2000}
OSL=${2:-400}
WORKERS=${3:-4}
SPEEDUP=${SPEEDUP:-1}
OUT=${OUT:-bench-out}
ISL=32
mkdir -p bin "$OUT"
go build -o bin/frontend ./cmd/frontend
go build -o bin/mocker ./cmd/mocker
go build -o bin/bench ./cmd/bench
# Each stream holds a client connection and a response stream: raise the
# open-files limit when allowed.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

# Per worker: room for its share of the sequences, their KV blocks (prompt
# after the chat template is about ISL+20 tokens, block size 16) and
# prefill of all of them at once.
seqs=$(( (N + WORKERS - 1) / WORKERS + 16 ))
blocks=$(( seqs * ((ISL + 20 + OSL) / 16 + 2) ))
export DYN_FILE_KV="$work/kv" DYN_LOG=warn
DYN_PPROF_ADDR= bin/mocker --model-path models/demo --num-workers "$WORKERS" --speedup-ratio "$SPEEDUP" \
  --max-num-seqs "$seqs" --num-gpu-blocks-override "$blocks" --max-num-batched-tokens $(( seqs * (ISL + 20) )) \
  --discovery-backend file >"$work/mocker.log" 2>&1 &
pids+=($!)
DYN_PPROF_ADDR=${FRONTEND_PPROF:-} DYN_HTTP_GRACEFUL_SHUTDOWN_TIMEOUT_SECS=0 bin/frontend --http-host 127.0.0.1 --http-port 8300 --discovery-backend file >"$work/frontend.log" 2>&1 &
frontend=$!
pids+=($frontend)
for _ in $(seq 1 400); do
  if curl -fsS http://127.0.0.1:8300/v1/models 2>/dev/null | grep -q '"demo"'; then break; fi
  sleep 0.05
done

echo "== $N concurrent streams of $OSL tokens (mocker speedup $SPEEDUP, $WORKERS workers x $seqs sequences)"
set +e
bin/bench run --url http://127.0.0.1:8300 --model demo --api chat --isl "$ISL" --osl "$OSL" \
  --concurrency "$N" --requests "$N" --warmup 0 --timeout 30m --progress 10s \
  --watch-pid "$frontend" --label "streams-$N" --json "$OUT/streams-$N.json" | tee "$OUT/streams-$N.txt"
code=${PIPESTATUS[0]}
set -e
cp "$work/frontend.log" "$OUT/streams-$N-frontend.log"
cp "$work/mocker.log" "$OUT/streams-$N-mocker.log"
if [ "$code" != 0 ] || ! grep -q " 0 failed" "$OUT/streams-$N.txt"; then
  echo "--- frontend log (last lines; all of it in $OUT/streams-$N-frontend.log)"; tail -20 "$work/frontend.log"
  echo "--- mocker log (last lines; all of it in $OUT/streams-$N-mocker.log)"; tail -20 "$work/mocker.log"
fi
exit "$code"
