#!/usr/bin/env bash
# bench-llamacpp.sh measures the stack in front of a real engine, in one
# run on this machine (file discovery, TCP request plane):
#
#   streams   K concurrent streams (closed loop) straight to llama-server's
#             own /v1/completions (API=chat: /v1/chat/completions), then
#             through frontend + cmd/worker
#             --engine llamacpp to the same engine, with the frontend's
#             processing (the model's tokenizer.json: model NAME) and with
#             the engine's (native: model NAME-native, no files): aggregate
#             tokens/s and TTFT of each, and their differences (bench
#             compare), in ROUNDS rounds (2), each run with prompts
#             of its own (no run finds another's in the engine's cache);
#   routing   two llama-servers behind two workers, a shared-prefix
#             workload through a round-robin frontend, then through a KV
#             frontend (approximate: llama.cpp publishes no KV events),
#             each on freshly started engines (empty prompt caches).
#
# Usage: scripts/bench-llamacpp.sh [streams|routing|all]   (default all)
# Environment: GGUF (default: a random-weight GGUF written by
# internal/testgguf from the Qwen3 tokenizer in ../shared when present,
# else the demo model's; LAYERS, HIDDEN, FFN size it), K (concurrency, 8),
# MODEL_DIR (with GGUF: the model's Hugging Face files, for the frontend
# processing run; without it that run is left out), REQUESTS (200), OSL
# (output tokens, 64), ISL (prompt words, 128), API (streams: completions,
# the default, or chat: llama-server's own chat endpoint renders the
# template and parses its output, which the completions endpoint does not),
# THREADS (llama-server --threads, 1), LLAMA_ARGS (more llama-server
# flags, e.g. --cache-ram 0: no prompt cache in host memory beyond the
# slots), KV_ARGS (more flags of the KV frontend, e.g.
# --kv-overlap-score-weight 2), PREFIX_GROUPS (routing: prefixes,
# 16), OUT (bench-out; the processes' logs go to OUT/logs).
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
K=${K:-8}
REQUESTS=${REQUESTS:-200}
OSL=${OSL:-64}
ISL=${ISL:-128}
THREADS=${THREADS:-1}
API=${API:-completions}
PREFIX_GROUPS=${PREFIX_GROUPS:-16}
ROUNDS=${ROUNDS:-2}
OUT=${OUT:-bench-out}
mkdir -p bin "$OUT"
go build -o bin/ ./cmd/frontend ./cmd/worker ./cmd/bench
server=${LLAMA_SERVER:-$(scripts/llama-server.sh)}

gguf=${GGUF:-}
src=${MODEL_DIR:-}
if [ -z "$gguf" ]; then
	src=models/demo
	[ -f ../shared/testdata/models/qwen3/tokenizer.json ] && src=../shared/testdata/models/qwen3
	gguf=bin/bench-$(basename "$src").gguf
	go run ./internal/testgguf/cmd/testgguf -from "$src" -o "$gguf" \
		-layers "${LAYERS:-4}" -hidden "${HIDDEN:-256}" -ffn "${FFN:-768}" -heads 8 -kv-heads 4 -head-dim 32
fi
model=$(basename "$gguf" .gguf)

work="$OUT/logs"
rm -rf "$work"
mkdir -p "$work"
pids=()
stop_all() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	pids=()
}
trap stop_all EXIT INT TERM

# engine NAME: starts llama-server on $gguf and sets url to its URL (not
# in a subshell: stop_all must know its pid).
engine() {
	setsid "$server" -m "$gguf" --host 127.0.0.1 --port 0 --no-webui --metrics -c $((4096 * K)) --parallel "$K" \
		--threads "$THREADS" --no-warmup ${LLAMA_ARGS:-} >"$work/$1.log" 2>&1 &
	pids+=($!)
	url=
	for _ in $(seq 600); do
		url=$(sed -n 's/.*listening on \(http:\/\/[^ ]*\).*/\1/p' "$work/$1.log" | head -n 1)
		if [ -n "$url" ] && curl -fsS "$url/health" >/dev/null 2>&1; then
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

# stack PORT ROUTER URL...: one native worker per engine URL (model
# $model-native) and a frontend; with FRONTEND_WORKER=1 also one with
# the frontend's processing ($src's files, model $model) on the first.
stack() {
	local port=$1 router=$2
	shift 2
	export DYN_FILE_KV="$work/kv-$port"
	local i=0
	local u
	for u in "$@"; do
		i=$((i + 1))
		bin/worker --engine llamacpp --engine-url "$u" --native-framework-processing --model-path "$gguf" \
			--model-name "$model-native" --endpoint dyn://dynamo.native.generate \
			--kv-block-size 16 >"$work/worker-$port-$i.log" 2>&1 &
		pids+=($!)
	done
	local want=("$model-native")
	if [ "${FRONTEND_WORKER:-}" = 1 ]; then
		bin/worker --engine llamacpp --engine-url "$1" --model-path "$src" --model-name "$model" \
			--kv-block-size 16 >"$work/worker-$port-frontend.log" 2>&1 &
		pids+=($!)
		want+=("$model")
	fi
	local flags=(--router-mode "$router")
	[ "$router" = kv ] && flags+=(--no-kv-events --kv-cache-block-size 16 ${KV_ARGS:-})
	bin/frontend --http-host 127.0.0.1 --http-port "$port" "${flags[@]}" >"$work/frontend-$port.log" 2>&1 &
	pids+=($!)
	local m
	for m in "${want[@]}"; do
		for _ in $(seq 600); do
			if curl -fsS "http://127.0.0.1:$port/v1/models" 2>/dev/null | grep -q "\"$m\""; then break; fi
			sleep 0.1
		done
		if ! curl -fsS "http://127.0.0.1:$port/v1/models" 2>/dev/null | grep -q "\"$m\""; then
			echo "bench-llamacpp: the stack did not list $m" >&2
			tail "$work"/*.log >&2
			exit 1
		fi
	done
}

if [ "$what" = streams ] || [ "$what" = all ]; then
	engine streams
	FRONTEND_WORKER=$([ -n "$src" ] && echo 1) stack 8300 round-robin "$url"
	common=(--concurrency "$K" --requests "$REQUESTS" --warmup "$K" --isl "$ISL" --osl "$OSL" --api "$API")
	# Every run sends prompts of its own (--seed): llama-server keeps
	# prompts in its cache (the slots, --cache-ram), and a run that sent
	# the prompts an earlier run sent would find them computed.
	seed=0
	next_seed() { seed=$((seed + 1)); }
	# A short unreported run on each path first: the first requests after
	# a start are slower (the model's pages, the processes' first
	# allocations), which would count against whichever path went first.
	for m in "$model" "$model-native"; do
		[ "$m" = "$model" ] && [ -z "$src" ] && continue
		next_seed
		bin/bench run --url http://127.0.0.1:8300 --model "$m" "${common[@]}" --seed "$seed" --requests $((4 * K)) --progress 0 >/dev/null
	done
	next_seed
	bin/bench run --url "$url" --model "$model" "${common[@]}" --seed "$seed" --requests $((4 * K)) --progress 0 >/dev/null
	for round in $(seq "$ROUNDS"); do
		next_seed
		echo "== round $round: $K streams straight to llama-server ($url)"
		bin/bench run --url "$url" --model "$model" "${common[@]}" --seed "$seed" --label "engine-$round" --json "$OUT/llama-engine-$round.json" >"$OUT/llama-engine-$round.txt"
		cat "$OUT/llama-engine-$round.txt"
		if [ -n "$src" ]; then
			next_seed
			echo "== round $round: $K streams through frontend + worker (frontend processing) to the same engine"
			bin/bench run --url http://127.0.0.1:8300 --model "$model" "${common[@]}" --seed "$seed" --label "stack-$round" --json "$OUT/llama-stack-$round.json" >"$OUT/llama-stack-$round.txt"
			cat "$OUT/llama-stack-$round.txt"
			bin/bench compare "$OUT/llama-engine-$round.json" "$OUT/llama-stack-$round.json"
		fi
		next_seed
		echo "== round $round: $K streams through frontend + worker (native processing) to the same engine"
		bin/bench run --url http://127.0.0.1:8300 --model "$model-native" "${common[@]}" --seed "$seed" --label "native-$round" --json "$OUT/llama-native-$round.json" >"$OUT/llama-native-$round.txt"
		cat "$OUT/llama-native-$round.txt"
		bin/bench compare "$OUT/llama-engine-$round.json" "$OUT/llama-native-$round.json"
	done
	stop_all
fi

if [ "$what" = routing ] || [ "$what" = all ]; then
	for router in round-robin kv; do
		engine "$router-a"
		a=$url
		engine "$router-b"
		b=$url
		stack 8400 "$router" "$a" "$b"
		echo "== shared prefixes through a $router frontend, two engines"
		bin/bench run --url http://127.0.0.1:8400 --model "$model-native" --concurrency "$K" --requests "$REQUESTS" --warmup 0 \
			--workload shared-prefix --groups "$PREFIX_GROUPS" --prefix-len 1500 --suffix-len 20 --osl 8 --api completions \
			--label "$router" --json "$OUT/llama-routing-$router.json" >"$OUT/llama-routing-$router.txt"
		# What the engines computed of the prompts they were sent: the
		# rest came from their prompt caches.
		computed=0
		for u in "$a" "$b"; do
			n=$(curl -fsS "$u/metrics" | sed -n 's/^llamacpp:prompt_tokens_total \([0-9.e+]*\).*/\1/p')
			computed=$(awk -v a="$computed" -v b="${n:-0}" 'BEGIN { printf "%d", a + b }')
		done
		sent=$(sed -n 's/.*"input_tokens": *\([0-9]*\).*/\1/p' "$OUT/llama-routing-$router.json" | head -n 1)
		echo "engines computed $computed prompt tokens of the $sent sent" >>"$OUT/llama-routing-$router.txt"
		cat "$OUT/llama-routing-$router.txt"
		stop_all
	done
	bin/bench compare "$OUT/llama-routing-round-robin.json" "$OUT/llama-routing-kv.json"
fi
