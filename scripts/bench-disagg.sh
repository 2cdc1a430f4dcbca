#!/usr/bin/env bash
# bench-disagg.sh compares aggregated and disaggregated serving on the
# mocker at speedup 1 (the simulated GPU's real time), with the same number
# of workers: AGG aggregated workers against 1 prefill + (AGG-1) decode
# workers, on a prefill-heavy mix (ISL-word prompts, OSL output tokens),
# at each of RATES (Poisson arrivals, req/s). It reports TTFT and ITL
# p50/p90/p99 per setup and load. File discovery, TCP request plane;
# round-robin routing.
#
# Usage: scripts/bench-disagg.sh [AGG] [ISL] [OSL] [RATES] [REQUESTS]
#        (default 4 1000 200 "2 4 8" 100)
# Environment: OUT (bench-out/disagg), PREFILL_ARGS (extra mocker flags
# for the prefill worker, e.g. "--kv-transfer-bandwidth 16").
set -euo pipefail
cd "$(dirname "$0")/.."
AGG=${1:-4}
ISL=${2:-1000}
OSL=${3:-200}
RATES=${4:-"2 4 8"}
REQUESTS=${5:-100}
OUT=${OUT:-bench-out/disagg}
mkdir -p bin "$OUT"
go build -o bin/ ./cmd/frontend ./cmd/mocker ./cmd/bench

work=$(mktemp -d)
pids=()
stop_all() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
}
trap 'stop_all; rm -rf "$work"' EXIT INT TERM

start() { # agg|disagg
  local d="$work/$1"
  mkdir -p "$d"
  export DYN_FILE_KV="$d/kv" DYN_LOG=warn DYN_TCP_RPC_HOST=127.0.0.1 DYN_TCP_RESPONSE_STREAM_HOST=127.0.0.1
  if [ "$1" = agg ]; then
    bin/mocker --model-path models/demo --num-workers "$AGG" --speedup-ratio 1 --discovery-backend file >"$d/mocker.log" 2>&1 &
    pids+=($!)
  else
    # shellcheck disable=SC2086
    bin/mocker --model-path models/demo --disaggregation-mode prefill --endpoint dyn://dynamo.prefill.generate \
      --speedup-ratio 1 --discovery-backend file ${PREFILL_ARGS:-} >"$d/prefill.log" 2>&1 &
    pids+=($!)
    bin/mocker --model-path models/demo --num-workers $((AGG - 1)) --disaggregation-mode decode --speedup-ratio 1 \
      --discovery-backend file >"$d/decode.log" 2>&1 &
    pids+=($!)
  fi
  DYN_HTTP_GRACEFUL_SHUTDOWN_TIMEOUT_SECS=0 bin/frontend --http-host 127.0.0.1 --http-port 8300 --discovery-backend file >"$d/frontend.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 300); do
    curl -fsS http://127.0.0.1:8300/v1/models 2>/dev/null | grep -q '"demo"' && break
    sleep 0.05
  done
  sleep 1 # every worker registered
}

# Each load on a fresh stack (cold caches), the same prompts for both
# setups.
for rate in $RATES; do
  for setup in agg disagg; do
    start "$setup"
    echo "== $setup, $rate req/s" >&2
    bin/bench run --url http://127.0.0.1:8300 --model demo --api chat --isl "$ISL" --osl "$OSL" \
      --rate "$rate" --requests "$REQUESTS" --warmup 10 --progress 0 --seed "$rate" \
      --label "$setup-$rate" --json "$OUT/$setup-$rate.json" >"$OUT/$setup-$rate.txt"
    stop_all
  done
done

printf '%-7s %-5s %7s | %9s %9s %9s | %8s %8s %8s | %6s\n' setup rate req/s "TTFT p50" p90 p99 "ITL p50" p90 p99 failed
for rate in $RATES; do
  for setup in agg disagg; do
    jq -r --arg s "$setup" --arg r "$rate" '[$s, $r, .request_throughput_rps, .ttft_ms.p50, .ttft_ms.p90, .ttft_ms.p99, .itl_ms.p50, .itl_ms.p90, .itl_ms.p99, .failed] | @tsv' "$OUT/$setup-$rate.json" |
      awk -F'\t' '{printf "%-7s %-5s %7.2f | %9.1f %9.1f %9.1f | %8.2f %8.2f %8.2f | %6d\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10}'
  done
done
echo "AGG=$AGG aggregated workers against 1 prefill + $((AGG - 1)) decode; ISL $ISL words, OSL $OSL tokens, $REQUESTS requests per load; ms; JSON in $OUT"
