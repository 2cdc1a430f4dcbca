#!/usr/bin/env bash
# bench-llamacpp.sh measures the stack in front of a real engine, in one
# run on this machine (file discovery, TCP request plane):
#
#   streams   K concurrent streams (closed loop) straight to llama-server's
#             own /v1/chat/completions, then through frontend + cmd/worker
#             --engine llamacpp to the same engine: aggregate tokens/s and
#             TTFT of each, and their difference (bench compare);
#   routing   two llama-servers behind two workers, a shared-prefix
#             workload through a round-robin frontend, then through a KV
#             frontend (approximate: llama.cpp publishes no KV events),
#             each on freshly started engines (empty prompt caches).
#
# Usage: scripts/bench-llamacpp.sh [streams|routing|all]   (default all)
# Environment: GGUF (default: a random-weight GGUF written by
# internal/testgguf from the Qwen3 tokenizer in ../shared when present,
# else the demo model's; LAYERS, HIDDEN, FFN size it), K (concurrency, 8),
# REQUESTS (200), OSL (output tokens, 64), ISL (prompt words, 128),
# THREADS (llama-server --threads, 1), OUT (bench-out).
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
K=${K:-8}
REQUESTS=${REQUESTS:-200}
OSL=${OSL:-64}
ISL=${ISL:-128}
THREADS=${THREADS:-1}
OUT=${OUT:-bench-out}
mkdir -p bin "$OUT"
go build -o bin/ ./cmd/frontend ./cmd/worker ./cmd/bench
server=${LLAMA_SERVER:-$(scripts/llama-server.sh)}

gguf=${GGUF:-}
if [ -z "$gguf" ]; then
	src=models/demo
	[ -f ../shared/testdata/models/qwen3/tokenizer.json ] && src=../shared/testdata/models/qwen3
	gguf=bin/bench-$(basename "$src").gguf
	go run ./internal/testgguf/cmd/testgguf -from "$src" -o "$gguf" \
		-layers "${LAYERS:-4}" -hidden "${HIDDEN:-256}" -ffn "${FFN:-768}" -heads 8 -kv-heads 4 -head-dim 32
fi
model=$(basename "$gguf" .gguf)

work=$(mktemp -d)
pids=()
stop_all() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	pids=()
}
trap 'stop_all; rm -rf "$work"' EXIT INT TERM

# engine NAME: starts llama-server on $gguf, prints its URL.
engine() {
	setsid "$server" -m "$gguf" --host 127.0.0.1 --port 0 --no-webui --metrics -c $((4096 * K)) --parallel "$K" \
		--threads "$THREADS" --no-warmup >"$work/$1.log" 2>&1 &
	pids+=($!)
	local url=
	for _ in $(seq 600); do
		url=$(sed -n 's/.*listening on \(http:\/\/[^ ]*\).*/\1/p' "$work/$1.log" | head -n 1)
		if [ -n "$url" ] && curl -fsS "$url/health" >/dev/null 2>&1; then
			echo "$url"
			return
		fi
		sleep 0.1
	done
	echo "bench-llamacpp: llama-server did not start:" >&2
	tail "$work/$1.log" >&2
	exit 1
}

export DYN_DISCOVERY_BACKEND=file DYN_REQUEST_PLANE=tcp DYN_LOG=warn
export DYN_TCP_RPC_HOST=127.0.0.1 DYN_TCP_RESPONSE_STREAM_HOST=127.0.0.1
export DYN_HTTP_GRACEFUL_SHUTDOWN_TIMEOUT_SECS=0 DYN_GRACEFUL_SHUTDOWN_GRACE_PERIOD_SECS=0

# stack PORT ROUTER URL...: one worker per engine URL and a frontend.
stack() {
	local port=$1 router=$2
	shift 2
	export DYN_FILE_KV="$work/kv-$port"
	local i=0
	for url in "$@"; do
		i=$((i + 1))
		bin/worker --engine llamacpp --engine-url "$url" --native-framework-processing --model-path "$gguf" \
			--kv-block-size 16 >"$work/worker-$port-$i.log" 2>&1 &
		pids+=($!)
	done
	local flags=(--router-mode "$router")
	[ "$router" = kv ] && flags+=(--no-kv-events --kv-cache-block-size 16)
	bin/frontend --http-host 127.0.0.1 --http-port "$port" "${flags[@]}" >"$work/frontend-$port.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 600); do
		if curl -fsS "http://127.0.0.1:$port/v1/models" 2>/dev/null | grep -q "\"$model\""; then return; fi
		sleep 0.1
	done
	echo "bench-llamacpp: the stack did not list $model" >&2
	tail "$work"/*.log >&2
	exit 1
}

if [ "$what" = streams ] || [ "$what" = all ]; then
	url=$(engine streams)
	stack 8300 round-robin "$url"
	common=(--model "$model" --concurrency "$K" --requests "$REQUESTS" --warmup "$K" --isl "$ISL" --osl "$OSL" --api chat)
	for round in 1 2; do
		echo "== round $round: $K streams straight to llama-server ($url)"
		bin/bench run --url "$url" "${common[@]}" --label "engine-$round" --json "$OUT/llama-engine-$round.json" >"$OUT/llama-engine-$round.txt"
		cat "$OUT/llama-engine-$round.txt"
		echo "== round $round: $K streams through frontend + worker to the same engine"
		bin/bench run --url http://127.0.0.1:8300 "${common[@]}" --label "stack-$round" --json "$OUT/llama-stack-$round.json" >"$OUT/llama-stack-$round.txt"
		cat "$OUT/llama-stack-$round.txt"
		bin/bench compare "$OUT/llama-engine-$round.json" "$OUT/llama-stack-$round.json"
	done
	stop_all
fi

if [ "$what" = routing ] || [ "$what" = all ]; then
	for router in round-robin kv; do
		a=$(engine "$router-a")
		b=$(engine "$router-b")
		stack 8400 "$router" "$a" "$b"
		echo "== shared prefixes through a $router frontend, two engines"
		bin/bench run --url http://127.0.0.1:8400 --model "$model" --concurrency "$K" --requests "$REQUESTS" --warmup 0 \
			--workload shared-prefix --groups 4 --prefix-len 1500 --suffix-len 20 --osl 8 --api chat \
			--label "$router" --json "$OUT/llama-routing-$router.json" >"$OUT/llama-routing-$router.txt"
		cat "$OUT/llama-routing-$router.txt"
		stop_all
	done
	bin/bench compare "$OUT/llama-routing-round-robin.json" "$OUT/llama-routing-kv.json"
fi
