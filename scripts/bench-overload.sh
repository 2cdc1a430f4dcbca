#!/usr/bin/env bash
# bench-overload.sh measures goodput under overload with and without the
# admission queue: two real-time mockers (--max-num-seqs SEQS each) behind
# one round-robin frontend, offered Poisson arrivals at 1x, 2x and 3x
# their capacity by cmd/bench, once with the default queue and once with
# --router-queue-max 0 (refuse at once when every worker is saturated).
# Each run gets a fresh deployment (file discovery, TCP request plane).
#
# Capacity is SEQS x 2 workers / the service time of one answer of OSL
# tokens, measured first in the same run with one request at a time
# (the baseline row).
#
# Usage: scripts/bench-overload.sh   Environment: SEQS (4), OSL (100),
# DURATION (15s), TIMEOUT (queue timeout, 5), OUT (bench-out/overload).
# Needs curl and jq.
set -euo pipefail
cd "$(dirname "$0")/.."
SEQS=${SEQS:-4}
OSL=${OSL:-100}
DURATION=${DURATION:-15s}
TIMEOUT=${TIMEOUT:-5}
OUT=${OUT:-bench-out/overload}
HTTP_PORT=${HTTP_PORT:-18400}
mkdir -p bin "$OUT"
rm -f "$OUT"/*.json
go build -o bin/ ./cmd/frontend ./cmd/mocker ./cmd/bench
work=$(mktemp -d)
pids=()
stop_all() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}
trap 'stop_all; rm -rf "$work"' EXIT INT TERM
export DYN_LOG=warn DYN_TCP_RPC_HOST=127.0.0.1 DYN_TCP_RESPONSE_STREAM_HOST=127.0.0.1 \
  DYN_GRACEFUL_SHUTDOWN_GRACE_PERIOD_SECS=0 DYN_HTTP_GRACEFUL_SHUTDOWN_TIMEOUT_SECS=0
url=http://127.0.0.1:$HTTP_PORT

# deploy NAME FRONTEND-FLAGS...: fresh mockers and frontend.
deploy() {
  local name=$1; shift
  export DYN_FILE_KV=$work/kv-$name
  for i in 1 2; do
    bin/mocker --model-path models/demo --discovery-backend file --request-plane tcp \
      --speedup-ratio 1 --max-num-seqs "$SEQS" >"$work/mocker-$name-$i.log" 2>&1 &
    pids+=($!)
  done
  bin/frontend --http-host 127.0.0.1 --http-port "$HTTP_PORT" --discovery-backend file --request-plane tcp \
    --router-queue-timeout "$TIMEOUT" "$@" >"$work/frontend-$name.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 300); do
    n=$(curl -fsS "$url/health" 2>/dev/null | jq '.instances | length' 2>/dev/null || echo 0)
    [ "$n" = 2 ] && return 0
    sleep 0.1
  done
  echo "bench-overload: $name did not come up" >&2; cat "$work/frontend-$name.log" >&2; exit 1
}

# run LABEL BENCH-FLAGS...
run() {
  local label=$1; shift
  bin/bench run --url "$url" --model demo --osl "$OSL" --isl 64 --warmup 0 --requests 0 \
    --timeout 60s --progress 0 --label "$label" --json "$OUT/$label.json" "$@" >/dev/null 2>&1
}

deploy baseline
run baseline --concurrency 1 --duration 5s
stop_all
e2e=$(jq '.e2e_ms.mean' "$OUT/baseline.json")
cap=$(jq -n --argjson e "$e2e" --argjson s "$SEQS" '2 * $s * 1000 / $e')
echo "one answer of $OSL tokens: ${e2e} ms; capacity: $cap req/s"

for load in 1 2 3; do
  rate=$(jq -n --argjson c "$cap" --argjson l "$load" '$c * $l')
  for q in queue noqueue; do
    flags=()
    [ "$q" = noqueue ] && flags=(--router-queue-max 0)
    deploy "$q-$load" "${flags[@]}"
    run "${q}-${load}x" --rate "$rate" --duration "$DURATION"
    stop_all
  done
done

printf '%-12s %8s %9s %9s %8s %9s %9s\n' run offered completed refused goodput ttft_p50 ttft_p99
for f in "$OUT"/baseline.json "$OUT"/queue-*.json "$OUT"/noqueue-*.json; do
  jq -r '[.label, (.achieved_arrival_rate_rps*10|round/10), .completed, .failed,
    (.request_throughput_rps*10|round/10), (.ttft_ms.p50|round), (.ttft_ms.p99|round)] | @tsv' "$f" |
    awk -F'\t' '{ printf "%-12s %8s %9s %9s %8s %9s %9s\n", $1, $2, $3, $4, $5, $6, $7 }'
done
