#!/usr/bin/env bash
# bench-mux.sh measures response-stream multiplexing (docs/protocol.md
# §7.8) on bench-stack.sh's workload: chat, 64-word prompts, 16 output
# tokens, a frontend and one mocker process with two workers at speedup
# 100000, file discovery, TCP request plane. Three stacks, each started
# fresh, in rotated order every round: "before" (the tree at REV), "shared"
# (the work tree) and "classic" (the work tree with DYN_TCP_RESPONSE_MUX=0
# in both processes: a connection per stream). Each round first measures
# the bare net/http baseline, then each stack at three loads: serial
# (concurrency 1, 2,000 requests), 500 req/s (5,000) and 1500 req/s
# (8,000). It reports the medians over the rounds of the TTFT the stack
# adds to the same round's baseline, of the request throughput, and of the
# frontend's and the mocker's CPU time per request (utime + stime from
# /proc). Needs jq and curl.
#
# Usage: scripts/bench-mux.sh REV [ROUNDS]     (default 5 rounds)
set -euo pipefail
cd "$(dirname "$0")/.."
REV=${1:?usage: scripts/bench-mux.sh REV [ROUNDS]}
ROUNDS=${2:-5}
OUT=${OUT:-bench-out/mux}
rm -rf "$OUT"; mkdir -p "$OUT/before" "$OUT/after"
OUT=$(cd "$OUT" && pwd)
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM
mkdir "$work/src"
git archive "$REV" | tar -x -C "$work/src"
(cd "$work/src" && go build -o "$OUT/before/" ./cmd/frontend ./cmd/mocker)
go build -o "$OUT/after/" ./cmd/frontend ./cmd/mocker ./cmd/bench
B=$OUT/after/bench
$B baseline --addr 127.0.0.1:8100 >"$work/baseline.log" 2>&1 &
pids+=($!)
sleep 1

common=(--model demo --warmup 200 --isl 64 --osl 16 --api chat --progress 0)
declare -A load=([serial]="--concurrency 1 --requests 2000" [r500]="--rate 500 --requests 5000" [r1500]="--rate 1500 --requests 8000")
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }
measure() { # url label kind [frontend-pid mocker-pid]
  local f0=0 m0=0
  if [ -n "${4:-}" ]; then f0=$(cpu "$4"); m0=$(cpu "$5"); fi
  # shellcheck disable=SC2086
  $B run --url "$1" "${common[@]}" ${load[$3]} --label "$2" --json "$OUT/$2.json" >/dev/null 2>&1
  if [ -n "${4:-}" ]; then echo "$2 $(($(cpu "$4") - f0)) $(($(cpu "$5") - m0))" >>"$OUT/cpu.txt"; fi
  return 0
}
variant() { # before|shared|classic round
  local bin=$OUT/after mux=1
  case $1 in before) bin=$OUT/before ;; classic) mux=0 ;; esac
  local d; d=$(mktemp -d -p "$work")
  DYN_TCP_RESPONSE_MUX=$mux DYN_FILE_KV=$d DYN_LOG=warn "$bin/mocker" --model-path models/demo --num-workers 2 --speedup-ratio 100000 --discovery-backend file >"$OUT/$1-$2.mocker.log" 2>&1 &
  local mp=$!
  DYN_TCP_RESPONSE_MUX=$mux DYN_FILE_KV=$d DYN_LOG=warn DYN_HTTP_GRACEFUL_SHUTDOWN_TIMEOUT_SECS=0 "$bin/frontend" --http-host 127.0.0.1 --http-port 8200 --discovery-backend file >"$OUT/$1-$2.frontend.log" 2>&1 &
  local fp=$!
  for _ in $(seq 1 200); do curl -fsS http://127.0.0.1:8200/v1/models 2>/dev/null | grep -q '"demo"' && break; sleep 0.05; done
  if ! kill -0 "$fp" 2>/dev/null || ! kill -0 "$mp" 2>/dev/null; then
    echo "bench-mux: the $1 stack did not start; logs in $OUT/$1-$2.*.log" >&2
    exit 1
  fi
  sleep 0.5
  for k in serial r500 r1500; do measure http://127.0.0.1:8200 "$1-$k-$2" "$k" "$fp" "$mp"; done
  kill "$fp" "$mp"; wait "$fp" "$mp" 2>/dev/null || true
}
orders=("before shared classic" "shared classic before" "classic before shared")
for r in $(seq 1 "$ROUNDS"); do
  echo "round $r of $ROUNDS" >&2
  for k in serial r500 r1500; do measure http://127.0.0.1:8100 "base-$k-$r" "$k"; done
  for v in ${orders[$(((r - 1) % 3))]}; do variant "$v" "$r"; done
done

tck=$(getconf CLK_TCK)
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
declare -A reqs=([serial]=2200 [r500]=5200 [r1500]=8200) # measured + warmup
printf '%-7s %-8s %14s %14s %9s %7s %16s %14s\n' load stack "added p50 ms" "added p99 ms" "req/s" failed "frontend ms/req" "mocker ms/req"
for k in serial r500 r1500; do
  for v in before shared classic; do
    a50=() a99=() tp=() fc=() mc=() failed=0
    for r in $(seq 1 "$ROUNDS"); do
      s=$OUT/$v-$k-$r.json b=$OUT/base-$k-$r.json
      a50+=("$(jq -n --slurpfile s "$s" --slurpfile b "$b" '$s[0].ttft_ms.p50 - $b[0].ttft_ms.p50')")
      a99+=("$(jq -n --slurpfile s "$s" --slurpfile b "$b" '$s[0].ttft_ms.p99 - $b[0].ttft_ms.p99')")
      tp+=("$(jq .request_throughput_rps "$s")")
      failed=$((failed + $(jq .failed "$s")))
      read -r f m < <(awk -v l="$v-$k-$r" '$1==l {print $2, $3}' "$OUT/cpu.txt")
      fc+=("$(awk -v t="$f" -v hz="$tck" -v n="${reqs[$k]}" 'BEGIN {print t*1000/hz/n}')")
      mc+=("$(awk -v t="$m" -v hz="$tck" -v n="${reqs[$k]}" 'BEGIN {print t*1000/hz/n}')")
    done
    printf '%-7s %-8s %+14.3f %+14.2f %9.0f %7d %16.3f %14.3f\n' "$k" "$v" \
      "$(printf '%s\n' "${a50[@]}" | median)" "$(printf '%s\n' "${a99[@]}" | median)" \
      "$(printf '%s\n' "${tp[@]}" | median)" "$failed" \
      "$(printf '%s\n' "${fc[@]}" | median)" "$(printf '%s\n' "${mc[@]}" | median)"
  done
done
echo "before = $REV ($(git rev-parse --short "$REV")), shared / classic = the work tree with DYN_TCP_RESPONSE_MUX=1 / 0; medians over $ROUNDS rounds; JSON and logs in $OUT"
