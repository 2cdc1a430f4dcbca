#!/usr/bin/env bash
# bench-kv.sh measures what KV-aware routing buys: cmd/bench's
# shared-prefix workload against four mocker workers, routed by
# --router-mode kv, round-robin and random, one mode after the other in one
# run, at the same offered load (Poisson arrivals at RATE req/s, same seed,
# so the same prompts in the same order at the same times).
#
# Each mode gets a fresh deployment: new mocker processes (empty prefix
# caches) and a new frontend, so every mode starts cold and pays its own
# first visits. NATS request plane (the KV events need it), file discovery;
# NATS itself is built from the module cache (no install needed).
#
# Per mode it prints TTFT, ITL and throughput (from cmd/bench) and the
# prefix hit rate: the sum of usage.prompt_tokens_details.cached_tokens
# over the sum of prompt tokens, read from the frontend's
# dynamo_frontend_cached_tokens and dynamo_frontend_input_sequence_tokens
# histograms around the run. It ends with the hit rate an oracle router
# would get: every request after its group's first lands on a worker that
# holds the group's prefix.
#
# Usage: scripts/bench-kv.sh [RATE] [REQUESTS]   (default 10 req/s, 200)
# Environment: SPEEDUP (mocker speedup, 1), NGROUPS (20), PREFIX (prefix
# words, 1300: about 4,000 tokens), SUFFIX (suffix words, 330: about
# 1,000), OSL (200), WORKERS (4), BLOCKS (KV cache blocks of 64 tokens per
# worker, 16384), KV_ARGS (more frontend flags in mode kv, e.g.
# "--kv-overlap-score-weight 2"), MODES ("kv round-robin random"; a mode
# kv@W is kv with --kv-overlap-score-weight W, e.g. "kv kv@4 round-robin
# random"), OUT (bench-out/kv).
# Needs curl and jq.
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${1:-10}
REQUESTS=${2:-200}
SPEEDUP=${SPEEDUP:-1}
NGROUPS=${NGROUPS:-20}
PREFIX=${PREFIX:-1300}
SUFFIX=${SUFFIX:-330}
OSL=${OSL:-200}
WORKERS=${WORKERS:-4}
BLOCKS=${BLOCKS:-16384}
KV_ARGS=${KV_ARGS:-}
MODES=${MODES:-kv round-robin random}
OUT=${OUT:-bench-out/kv}
BLOCK=64
NATS_PORT=${NATS_PORT:-14322}
HTTP_PORT=${HTTP_PORT:-18300}
for tool in curl jq; do
  command -v "$tool" >/dev/null || { echo "bench-kv: needs $tool" >&2; exit 1; }
done
mkdir -p bin "$OUT"
rm -f "$OUT"/*.json "$OUT"/*.txt "$OUT"/*.tokens
go build -o bin/ ./cmd/frontend ./cmd/mocker ./cmd/bench
go build -o bin/nats-server github.com/nats-io/nats-server/v2

work=$(mktemp -d)
pids=()
stop_all() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}
nats_pid=
cleanup() {
  stop_all
  if [ -n "$nats_pid" ]; then kill "$nats_pid" 2>/dev/null || true; wait "$nats_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

export NATS_SERVER=nats://127.0.0.1:$NATS_PORT DYN_LOG=warn \
  DYN_TCP_RPC_HOST=127.0.0.1 DYN_TCP_RESPONSE_STREAM_HOST=127.0.0.1 \
  DYN_GRACEFUL_SHUTDOWN_GRACE_PERIOD_SECS=0 DYN_HTTP_GRACEFUL_SHUTDOWN_TIMEOUT_SECS=0
bin/nats-server -a 127.0.0.1 -p "$NATS_PORT" >"$work/nats.log" 2>&1 &
nats_pid=$!
url=http://127.0.0.1:$HTTP_PORT

# metric NAME: the value of one sample of the frontend's /metrics.
metric() {
  curl -fsS "$url/metrics" | awk -v n="$1" '$1 == n || index($1, n "{") == 1 { s += $2 } END { printf "%.0f\n", s }'
}

# deploy MODE: fresh mockers and a frontend routing with MODE (kv@W: kv
# with overlap weight W); waits until the frontend routes to every worker.
deploy() {
  local mode=${1%@*} args=()
  if [ "$mode" = kv ]; then
    read -ra args <<<"$KV_ARGS"
    if [ "$1" != kv ]; then args+=(--kv-overlap-score-weight "${1#kv@}"); fi
  fi
  export DYN_FILE_KV="$work/kv-$1"
  for i in $(seq 1 "$WORKERS"); do
    bin/mocker --model-path models/demo --discovery-backend file --request-plane nats \
      --speedup-ratio "$SPEEDUP" --block-size "$BLOCK" --num-gpu-blocks-override "$BLOCKS" --context-length 16384 >"$work/mocker-$1-$i.log" 2>&1 &
    pids+=($!)
  done
  bin/frontend --http-host 127.0.0.1 --http-port "$HTTP_PORT" --discovery-backend file --request-plane nats \
    --router-mode "$mode" "${args[@]}" >"$work/frontend-$1.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 400); do
    n=$(curl -fsS "$url/health" 2>/dev/null | jq '.instances | length' 2>/dev/null || echo 0)
    if [ "$n" = "$WORKERS" ] && curl -fsS "$url/v1/models" 2>/dev/null | grep -q '"demo"'; then return 0; fi
    sleep 0.05
  done
  echo "bench-kv: the $1 deployment did not come up" >&2
  cat "$work/frontend-$1.log" >&2
  return 1
}

common=(--url "$url" --model demo --api chat --workload shared-prefix --groups "$NGROUPS"
  --prefix-len "$PREFIX" --suffix-len "$SUFFIX" --osl "$OSL" --rate "$RATE"
  --requests "$REQUESTS" --warmup 0 --seed 1 --timeout 5m --progress 0)

printf '%-12s %9s %9s %9s %9s %9s %9s %9s %9s\n' mode ttft_p50 ttft_p90 ttft_p99 itl_p50 itl_p90 req/s out_tok/s hit_rate >"$OUT/summary.txt"
for mode in $MODES; do
  deploy "$mode"
  c0=$(metric dynamo_frontend_cached_tokens_sum)
  i0=$(metric dynamo_frontend_input_sequence_tokens_sum)
  echo "== $mode: $REQUESTS requests at $RATE req/s"
  bin/bench run "${common[@]}" --label "$mode" --json "$OUT/$mode.json" >"$OUT/$mode.txt"
  cat "$OUT/$mode.txt"
  c1=$(metric dynamo_frontend_cached_tokens_sum)
  i1=$(metric dynamo_frontend_input_sequence_tokens_sum)
  hit=$(awk -v c=$((c1 - c0)) -v i=$((i1 - i0)) 'BEGIN { printf "%.3f", (i > 0 ? c / i : 0) }')
  echo "prefix hit rate: $((c1 - c0)) cached of $((i1 - i0)) prompt tokens = $hit"
  if [ "${mode%@*}" = kv ]; then
    curl -fsS "$url/metrics" | awk '
      /^dynamo_component_router_kv_hit_rate_(sum|count)/ { v[$1] = $2 }
      /^dynamo_router_overhead_total_ms_(sum|count)/ { v[$1] = $2 }
      END {
        if (v["dynamo_component_router_kv_hit_rate_count"] > 0)
          printf "router: predicted hit rate %.3f, routing overhead %.3f ms per request\n",
            v["dynamo_component_router_kv_hit_rate_sum"] / v["dynamo_component_router_kv_hit_rate_count"],
            v["dynamo_router_overhead_total_ms_sum"] / v["dynamo_router_overhead_total_ms_count"]
      }' | tee "$OUT/$mode-router.txt"
  fi
  echo "$i1 $i0" >"$OUT/$mode.tokens"
  jq -r --arg m "$mode" --arg hit "$hit" \
    '[$m, .ttft_ms.p50, .ttft_ms.p90, .ttft_ms.p99, .itl_ms.p50, .itl_ms.p90, .request_throughput_rps, .output_token_throughput_tps, $hit]
     | "\(.[0]) \(.[1]) \(.[2]) \(.[3]) \(.[4]) \(.[5]) \(.[6]) \(.[7]) \(.[8])"' "$OUT/$mode.json" |
    awk '{ printf "%-12s %9.1f %9.1f %9.1f %9.2f %9.2f %9.2f %9.0f %9s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9 }' >>"$OUT/summary.txt"
  stop_all
done

# The oracle: one cold request per group, every other request served from
# a cache holding its group's prefix (its full blocks). The cached part of
# a hit is measured on a fresh deployment: two requests of group 0.
deploy kv
c0=$(metric dynamo_frontend_cached_tokens_sum)
bin/bench run --url "$url" --model demo --api chat --workload shared-prefix --groups 1 --prefix-len "$PREFIX" \
  --suffix-len "$SUFFIX" --osl 1 --concurrency 1 --requests 2 --warmup 0 --seed 1 --progress 0 >/dev/null
hit_tokens=$(($(metric dynamo_frontend_cached_tokens_sum) - c0))
stop_all
first=$(ls "$OUT"/*.tokens | head -1)
read -r i1 i0 <"$first"
awk -v n="$REQUESTS" -v g="$NGROUPS" -v h="$hit_tokens" -v i=$((i1 - i0)) 'BEGIN {
  printf "oracle: (%d requests - %d groups) x %d cached tokens / %d prompt tokens = %.3f\n", n, g, h, i, (n - g) * h / i }' >>"$OUT/summary.txt"
for f in "$OUT"/kv*.json; do
  [ -f "$f" ] && [ -f "$OUT/round-robin.json" ] || continue
  jq -rn --arg m "$(basename "$f" .json)" --slurpfile kv "$f" --slurpfile rr "$OUT/round-robin.json" \
    '"TTFT p90 round-robin / \($m) = \($rr[0].ttft_ms.p90 / $kv[0].ttft_ms.p90 * 100 | round / 100)x (goal: at least 3x)"' >>"$OUT/summary.txt"
done
echo
cat "$OUT/summary.txt"
