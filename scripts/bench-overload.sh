#!/usr/bin/env bash
# bench-overload.sh measures the frontend under overload. Three parts:
#
#   goodput (default)  two real-time mockers (--max-num-seqs SEQS each)
#       behind one frontend in each router mode of MODES, offered Poisson
#       arrivals at each multiple of LOADS of their capacity by cmd/bench,
#       once with the default admission queue and once with
#       --router-queue-max 0 (refuse at once when every worker is
#       saturated). Each run gets a fresh deployment (file discovery, TCP
#       request plane; router mode kv is then in approximate mode). The
#       table gives completions, refusals (and their share of the
#       arrivals), throughput, the goodput (completed requests whose TTFT
#       is within SLO, per second) and TTFT p50/p99 of the admitted
#       requests. Capacity is SEQS x 2 workers / the service time of one
#       answer of OSL tokens, measured first in the same run with one
#       request at a time (the baseline row).
#   storm FRONTEND LABEL  the issue's failure, scaled to this machine:
#       STORM_CLIENTS closed-loop clients that retry at once after a
#       refusal (bench --ignore-retry-after), for STORM_DURATION, against
#       two real-time mockers (--max-num-seqs STORM_SEQS, STORM_OSL
#       tokens per answer) behind the frontend binary FRONTEND (default:
#       this tree's) on the TCP request plane; reports failures, "no
#       instances" answers, ack timeouts and instances reported down in the
#       frontend's log, and its peak RSS. STORM_HONOUR=1 lets the clients
#       honour Retry-After instead.
#   stall FRONTEND LABEL  a live worker that stops acking: STALL_CLIENTS
#       closed-loop clients for 20 s against two real-time mockers
#       (--max-num-seqs SEQS) behind FRONTEND on the TCP request plane;
#       5 s in, one mocker is stopped (SIGSTOP) for STALL_FOR, longer than
#       the ack timeout (5 s), then resumed: its kernel keeps its
#       connections and acknowledges what it is sent, its process acks
#       nothing (as a worker starved of CPU, or in a long pause). Reports
#       failures, ack timeouts and instances reported down in the
#       frontend's log, and the requests the queue sent again.
#   e2e  test/e2e's TestOverload with DYN_E2E_OVERLOAD_DURATION=DURATION
#       (30s by default here: the issue's length; CI runs 6 s).
#
# Environment: MODES ("round-robin kv"), LOADS ("1 1.5 2 3"), SEQS (4),
# OSL (100), DURATION (15s; e2e: 30s), TIMEOUT (queue timeout, 5), POLICY
# (queue policy, fcfs), SLO
# (TTFT objective, 1s), OUT (bench-out/overload), STORM_CLIENTS (2000),
# STORM_SEQS (8), STORM_OSL (200), STORM_DURATION (30s), STALL_CLIENTS
# (24), STALL_FOR (8). Needs curl and jq.
set -euo pipefail
cd "$(dirname "$0")/.."
part=${1:-goodput}
MODES=${MODES:-round-robin kv}
LOADS=${LOADS:-1 1.5 2 3}
SEQS=${SEQS:-4}
OSL=${OSL:-100}
TIMEOUT=${TIMEOUT:-5}
POLICY=${POLICY:-fcfs}
SLO=${SLO:-1s}
OUT=${OUT:-bench-out/overload}
HTTP_PORT=${HTTP_PORT:-18400}
STORM_CLIENTS=${STORM_CLIENTS:-2000}
STORM_SEQS=${STORM_SEQS:-8}
STORM_OSL=${STORM_OSL:-200}
STORM_DURATION=${STORM_DURATION:-30s}

if [ "$part" = e2e ]; then
  DYN_E2E_OVERLOAD_DURATION=${DURATION:-30s} exec go test -count=1 -v -run 'TestOverload$' ./test/e2e/
fi
DURATION=${DURATION:-15s}

mkdir -p bin "$OUT"
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
frontend_pid=

# deploy NAME FRONTEND-BIN SEQS FRONTEND-FLAGS...: fresh mockers and frontend.
deploy() {
  local name=$1 bin=$2 seqs=$3; shift 3
  export DYN_FILE_KV=$work/kv-$name
  for i in 1 2; do
    bin/mocker --model-path models/demo --discovery-backend file --request-plane tcp \
      --speedup-ratio 1 --max-num-seqs "$seqs" >"$work/mocker-$name-$i.log" 2>&1 &
    pids+=($!)
  done
  "$bin" --http-host 127.0.0.1 --http-port "$HTTP_PORT" --discovery-backend file --request-plane tcp \
    "$@" >"$work/frontend-$name.log" 2>&1 &
  frontend_pid=$!
  pids+=($frontend_pid)
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
  bin/bench run --url "$url" --model demo --isl 64 --warmup 0 --requests 0 \
    --timeout 120s --progress 0 --slo-ttft "$SLO" --label "$label" --json "$OUT/$label.json" "$@" >/dev/null 2>&1 || true
}

if [ "$part" = stall ]; then
  bin=${2:-bin/frontend}
  label=${3:-after}
  deploy "stall-$label" "$bin" "$SEQS"
  victim=${pids[0]}
  run "stall-$label" --osl "$OSL" --concurrency "${STALL_CLIENTS:-24}" --duration 20s --watch-pid "$frontend_pid" &
  bench_pid=$!
  sleep 5
  kill -STOP "$victim"
  sleep "${STALL_FOR:-8}"
  kill -CONT "$victim"
  wait "$bench_pid" || true
  curl -fsS "$url/metrics" >"$OUT/stall-$label.metrics" 2>/dev/null || true
  log=$work/frontend-stall-$label.log
  cp "$log" "$OUT/stall-$label.frontend.log"
  stop_all
  f=$OUT/stall-$label.json
  echo "stall $label ($bin): ${STALL_CLIENTS:-24} clients for 20 s, two mockers --max-num-seqs $SEQS, OSL $OSL; one mocker stopped ${STALL_FOR:-8} s from 5 s in"
  jq -r '"  completed \(.completed), refused \(.refused) \(.refused_status // {}), failed \(.failed) \(.errors) (\(.http_status // {}))",
    "  completed \(.request_throughput_rps) req/s, TTFT p50 \(.ttft_ms.p50|round) ms p99 \(.ttft_ms.p99|round) ms max \(.ttft_ms.max|round) ms",
    "  error samples: \(.error_samples // [] | join(" | "))"' "$f"
  echo "  frontend log: $(grep -c 'ack timeout' "$log" || true) lines with 'ack timeout', $(grep -c 'instance reported down' "$log" || true) 'instance reported down', $(grep -c 'no instances' "$log" || true) 'no instances'"
  echo "  requeued by workers' refusals: $(grep '^dynamo_frontend_router_queue_requeued_total' "$OUT/stall-$label.metrics" | tr '\n' ' ' || true)"
  exit 0
fi

if [ "$part" = storm ]; then
  bin=${2:-bin/frontend}
  label=${3:-after}
  flags=(--ignore-retry-after)
  [ "${STORM_HONOUR:-0}" = 1 ] && flags=()
  deploy "storm-$label" "$bin" "$STORM_SEQS"
  run "storm-$label" --osl "$STORM_OSL" --concurrency "$STORM_CLIENTS" --duration "$STORM_DURATION" \
    --watch-pid "$frontend_pid" "${flags[@]}"
  curl -fsS "$url/metrics" >"$OUT/storm-$label.metrics" 2>/dev/null || true
  log=$work/frontend-storm-$label.log
  cp "$log" "$OUT/storm-$label.frontend.log"
  stop_all
  f=$OUT/storm-$label.json
  echo "storm $label ($bin): $STORM_CLIENTS clients, $STORM_DURATION, two mockers --max-num-seqs $STORM_SEQS, OSL $STORM_OSL"
  jq -r '"  completed \(.completed), refused \(.refused) \(.refused_status // {}), failed \(.failed) \(.errors) (\(.http_status // {}))",
    "  completed \(.request_throughput_rps) req/s, TTFT p50 \(.ttft_ms.p50|round) ms p99 \(.ttft_ms.p99|round) ms",
    "  frontend peak RSS \((.processes[0].peak_rss_bytes // 0) / 1048576 | round) MB, CPU \(.processes[0].cpu_s // 0) s",
    "  error samples: \(.error_samples // [] | join(" | "))"' "$f"
  echo "  frontend log: $(grep -c 'no instances' "$log" || true) lines with 'no instances', $(grep -c 'ack timeout' "$log" || true) with 'ack timeout', $(grep -c 'instance reported down' "$log" || true) 'instance reported down'"
  echo "  requeued by workers' refusals: $(grep '^dynamo_frontend_router_queue_requeued_total' "$OUT/storm-$label.metrics" | tr '\n' ' ' || true)"
  exit 0
fi

deploy baseline bin/frontend "$SEQS" --router-queue-timeout "$TIMEOUT"
run baseline --osl "$OSL" --concurrency 1 --duration 5s
stop_all
e2e=$(jq '.e2e_ms.mean' "$OUT/baseline.json")
cap=$(jq -n --argjson e "$e2e" --argjson s "$SEQS" '2 * $s * 1000 / $e')
echo "one answer of $OSL tokens: ${e2e} ms; capacity: $cap req/s; SLO: TTFT within $SLO"

for mode in $MODES; do
  for load in $LOADS; do
    rate=$(jq -n --argjson c "$cap" --argjson l "$load" '$c * $l')
    for q in queue noqueue; do
      flags=(--router-mode "$mode" --router-queue-timeout "$TIMEOUT" --router-queue-policy "$POLICY")
      [ "$q" = noqueue ] && flags+=(--router-queue-max 0)
      deploy "$mode-$q-$load" bin/frontend "$SEQS" "${flags[@]}"
      run "$mode-$q-${load}x" --osl "$OSL" --rate "$rate" --duration "$DURATION"
      stop_all
    done
  done
done

printf '%-24s %8s %9s %8s %8s %9s %9s %9s %9s\n' run offered completed refused "refused%" "req/s" goodput ttft_p50 ttft_p99
for f in "$OUT"/baseline.json $(for m in $MODES; do for q in queue noqueue; do for l in $LOADS; do echo "$OUT/$m-$q-${l}x.json"; done; done; done); do
  jq -r '[.label, (.achieved_arrival_rate_rps*10|round/10), .completed, .refused,
    (if .launched > 0 then (.refused*1000/.launched|round/10) else 0 end),
    (.request_throughput_rps*10|round/10), (.goodput_rps*10|round/10), (.ttft_ms.p50|round), (.ttft_ms.p99|round)] | @tsv' "$f" |
    awk -F'\t' '{ printf "%-24s %8s %9s %8s %8s %9s %9s %9s %9s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9 }'
done
