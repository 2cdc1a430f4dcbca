#!/usr/bin/env bash
# bench-conversations.sh measures long conversations through the stack
# (cmd/bench --workload multi-turn): one frontend and two mocker workers
# at a very high speedup ratio (the simulated engine takes ~no time), file
# discovery and the TCP request plane, all on this machine. It runs the
# same conversations twice in one run: with the frontend's conversation
# cache off (--conversation-cache-mib 0: every turn renders and tokenizes
# the whole history, as before issue 29) and on (the default), and prints
# the frontend's CPU per turn and the turns/s of each, and their
# difference (bench compare).
#
# Usage: scripts/bench-conversations.sh
# Environment: TURNS (30), HISTORY (words at the last turn, 60000), TURN
# (words per new user message, 200), OSL (16), C (conversations in flight,
# 8), REQUESTS (turns measured, 480), WARMUP (turns, 60), MODEL_DIR (the
# model's files: ../shared/testdata/models/qwen3 when present, else
# models/demo), OLD_FRONTEND (a frontend binary built from an earlier
# commit, run first as "before" with its defaults), OUT (bench-out).
set -euo pipefail
cd "$(dirname "$0")/.."
TURNS=${TURNS:-30}
HISTORY=${HISTORY:-60000}
TURN=${TURN:-200}
OSL=${OSL:-16}
C=${C:-8}
REQUESTS=${REQUESTS:-480}
WARMUP=${WARMUP:-60}
OUT=${OUT:-bench-out}
model_dir=${MODEL_DIR:-models/demo}
if [ -z "${MODEL_DIR:-}" ] && [ -f ../shared/testdata/models/qwen3/tokenizer.json ]; then
  model_dir=../shared/testdata/models/qwen3
fi
mkdir -p bin "$OUT"
go build -o bin/ ./cmd/frontend ./cmd/mocker ./cmd/bench

# A one-machine stack's environment and the children's stop on exit
# ($kv is the discovery directory, removed then; the logs go there too).
. scripts/lib/stack.sh
export DYN_LOG=warn
work=$kv
bin/mocker --model-path "$model_dir" --model-name conv --num-workers 2 --speedup-ratio 100000 \
  --context-length 131072 >"$work/mocker.log" 2>&1 &
mocker=$!
pids+=($mocker)

# run LABEL BINARY FRONTEND-FLAGS...: a frontend with those flags, the
# conversations through it, then the frontend stopped.
run() {
  local label=$1 bin=$2
  shift 2
  "$bin" --http-host 127.0.0.1 --http-port 8201 "$@" >"$work/frontend-$label.log" 2>&1 &
  local fe=$!
  pids+=("$fe")
  for _ in $(seq 1 200); do
    if curl -fsS http://127.0.0.1:8201/v1/models 2>/dev/null | grep -q '"conv"'; then break; fi
    sleep 0.05
  done
  echo "== $label"
  bin/bench run --url http://127.0.0.1:8201 --model conv --api chat --workload multi-turn \
    --turns "$TURNS" --history-len "$HISTORY" --turn-len "$TURN" --osl "$OSL" \
    --concurrency "$C" --requests "$REQUESTS" --warmup "$WARMUP" --timeout 120s \
    --label "$label" --watch-pid "$fe,$mocker" --json "$OUT/conv-$label.json" >"$OUT/conv-$label.txt"
  cat "$OUT/conv-$label.txt"
  kill "$fe"
  wait "$fe" 2>/dev/null || true
}
if [ -n "${OLD_FRONTEND:-}" ]; then
  run before "$OLD_FRONTEND"
fi
run whole bin/frontend --conversation-cache-mib 0
run cached bin/frontend
echo "== cached minus whole"
bin/bench compare "$OUT/conv-whole.json" "$OUT/conv-cached.json"
