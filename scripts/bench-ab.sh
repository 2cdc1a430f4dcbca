#!/usr/bin/env bash
# bench-ab.sh compares the stack of an earlier revision (A) with the work
# tree (B) on bench-stack.sh's workload: chat, 64-word prompts, 16 output
# tokens, frontend + one mocker process with two workers at speedup 100000,
# file discovery, TCP request plane. Each round measures the bare net/http
# baseline, then A and B (ABBA order, each started fresh), at three loads:
# serial (concurrency 1, 2,000 requests), 500 req/s (5,000) and saturation
# (64 closed-loop clients, 8,000). It reports the medians over the rounds of
# the TTFT the stack adds to the baseline of the same round, the request
# throughput, and the frontend's and the mocker's CPU time per request
# (utime + stime from /proc); then, round by round, each tree's
# saturation throughput against the bare server's of that round and the
# TTFT it added at 500 req/s. Needs jq and curl.
#
# Usage: scripts/bench-ab.sh REV [ROUNDS]     (default 6 rounds)
#
# REV "worktree" makes A the work tree too, to compare two settings of one
# build: A_ENV and B_ENV add environment variables to A's and to B's
# processes (e.g. B_ENV="OTEL_EXPORT_ENABLED=1"), and OTLP_SINK=ADDR runs
# `bench otlp-sink` there for the run (e.g. OTLP_SINK=127.0.0.1:4317).
set -euo pipefail
cd "$(dirname "$0")/.."
REV=${1:?usage: scripts/bench-ab.sh REV [ROUNDS]}
ROUNDS=${2:-6}
OUT=${OUT:-bench-out/ab}
rm -rf "$OUT"; mkdir -p "$OUT/a" "$OUT/b"
OUT=$(cd "$OUT" && pwd) # absolute: A is built from another directory
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  git worktree remove --force "$work/a-src" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM
if [ "$REV" = worktree ]; then
  go build -o "$OUT/a/" ./cmd/frontend ./cmd/mocker
else
  git worktree add --detach "$work/a-src" "$REV" >/dev/null
  (cd "$work/a-src" && go build -o "$OUT/a/" ./cmd/frontend ./cmd/mocker)
fi
go build -o "$OUT/b/" ./cmd/frontend ./cmd/mocker ./cmd/bench
B=$OUT/b/bench
$B baseline --addr 127.0.0.1:8100 >"$work/baseline.log" 2>&1 &
pids+=($!)
if [ -n "${OTLP_SINK:-}" ]; then
  $B otlp-sink --addr "$OTLP_SINK" >"$OUT/otlp-sink.log" 2>&1 &
  pids+=($!)
fi
declare -A venv=([a]="${A_ENV:-}" [b]="${B_ENV:-}")
sleep 1

common=(--model demo --warmup 200 --isl 64 --osl 16 --api chat --progress 0)
declare -A load=([serial]="--concurrency 1 --requests 2000" [r500]="--rate 500 --requests 5000" [sat]="--concurrency 64 --requests 8000")
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }
measure() { # url label kind [frontend-pid mocker-pid]
  local before=0 mbefore=0
  [ -n "${4:-}" ] && before=$(cpu "$4") && mbefore=$(cpu "$5")
  # shellcheck disable=SC2086
  $B run --url "$1" "${common[@]}" ${load[$3]} --label "$2" --json "$OUT/$2.json" >/dev/null 2>&1
  [ -n "${4:-}" ] && echo "$2 $(( $(cpu "$4") - before )) $(( $(cpu "$5") - mbefore ))" >>"$OUT/cpu.txt"
  return 0
}
variant() { # a|b round
  local d; d=$(mktemp -d -p "$work")
  # shellcheck disable=SC2086
  env ${venv[$1]} DYN_FILE_KV=$d DYN_LOG=warn "$OUT/$1/mocker" --model-path models/demo --num-workers 2 --speedup-ratio 100000 --discovery-backend file >"$d.m.log" 2>&1 &
  local mp=$!
  # shellcheck disable=SC2086
  env ${venv[$1]} DYN_FILE_KV=$d DYN_LOG=warn DYN_HTTP_GRACEFUL_SHUTDOWN_TIMEOUT_SECS=0 "$OUT/$1/frontend" --http-host 127.0.0.1 --http-port 8200 --discovery-backend file >"$d.f.log" 2>&1 &
  local fp=$!
  for _ in $(seq 1 200); do curl -fsS http://127.0.0.1:8200/v1/models 2>/dev/null | grep -q '"demo"' && break; sleep 0.05; done
  sleep 0.5
  for k in serial r500 sat; do measure http://127.0.0.1:8200 "$1-$k-$2" "$k" "$fp" "$mp"; done
  kill "$fp" "$mp"; wait "$fp" "$mp" 2>/dev/null || true
}
for r in $(seq 1 "$ROUNDS"); do
  echo "round $r of $ROUNDS" >&2
  for k in serial r500 sat; do measure http://127.0.0.1:8100 "base-$k-$r" "$k"; done
  if (( r % 2 )); then variant a "$r"; variant b "$r"; else variant b "$r"; variant a "$r"; fi
done

tck=$(getconf CLK_TCK)
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
declare -A reqs=([serial]=2200 [r500]=5200 [sat]=8200) # measured + warmup
printf '%-7s %-4s %14s %14s %12s %16s %14s\n' load tree "added p50 ms" "added p99 ms" "req/s" "frontend ms/req" "mocker ms/req"
for k in serial r500 sat; do
  for v in a b; do
    a50=() a99=() tp=() c=() mc=()
    for r in $(seq 1 "$ROUNDS"); do
      a50+=("$(jq -n --slurpfile s "$OUT/$v-$k-$r.json" --slurpfile b "$OUT/base-$k-$r.json" '$s[0].ttft_ms.p50 - $b[0].ttft_ms.p50')")
      a99+=("$(jq -n --slurpfile s "$OUT/$v-$k-$r.json" --slurpfile b "$OUT/base-$k-$r.json" '$s[0].ttft_ms.p99 - $b[0].ttft_ms.p99')")
      tp+=("$(jq .request_throughput_rps "$OUT/$v-$k-$r.json")")
      t=$(awk -v l="$v-$k-$r" '$1==l {print $2}' "$OUT/cpu.txt")
      m=$(awk -v l="$v-$k-$r" '$1==l {print $3}' "$OUT/cpu.txt")
      c+=("$(awk -v t="$t" -v hz="$tck" -v n="${reqs[$k]}" 'BEGIN {print t*1000/hz/n}')")
      mc+=("$(awk -v t="$m" -v hz="$tck" -v n="${reqs[$k]}" 'BEGIN {print t*1000/hz/n}')")
    done
    printf '%-7s %-4s %+14.3f %+14.2f %12.0f %16.3f %14.3f\n' "$k" "$v" \
      "$(printf '%s\n' "${a50[@]}" | median)" "$(printf '%s\n' "${a99[@]}" | median)" \
      "$(printf '%s\n' "${tp[@]}" | median)" "$(printf '%s\n' "${c[@]}" | median)" "$(printf '%s\n' "${mc[@]}" | median)"
  done
done
# Per round: saturation against the bare server of the same round, and
# the TTFT added at 500 req/s (the goals of docs/benchmarks.md).
printf '\n%-6s %10s %10s %10s %8s %8s %22s %22s\n' round "bare req/s" "a req/s" "b req/s" "a/bare" "b/bare" "a added p50/p99 ms" "b added p50/p99 ms"
for r in $(seq 1 "$ROUNDS"); do
  bs=$(jq .request_throughput_rps "$OUT/base-sat-$r.json")
  as=$(jq .request_throughput_rps "$OUT/a-sat-$r.json")
  bb=$(jq .request_throughput_rps "$OUT/b-sat-$r.json")
  added() { jq -rn --slurpfile s "$OUT/$1-r500-$r.json" --slurpfile b "$OUT/base-r500-$r.json" '"\($s[0].ttft_ms.p50 - $b[0].ttft_ms.p50 | .*100 | round / 100) / \($s[0].ttft_ms.p99 - $b[0].ttft_ms.p99 | .*100 | round / 100)"'; }
  printf '%-6s %10.0f %10.0f %10.0f %8.2f %8.2f %22s %22s\n' "$r" "$bs" "$as" "$bb" \
    "$(awk -v x="$as" -v y="$bs" 'BEGIN {print x/y}')" "$(awk -v x="$bb" -v y="$bs" 'BEGIN {print x/y}')" "$(added a)" "$(added b)"
done
if [ "$REV" = worktree ]; then
  echo "a = the work tree with A_ENV='${A_ENV:-}', b = the work tree with B_ENV='${B_ENV:-}'; medians over $ROUNDS rounds; JSON in $OUT"
else
  echo "a = $REV ($(git rev-parse --short "$REV")), b = the work tree; medians over $ROUNDS rounds; JSON in $OUT"
fi
