#!/usr/bin/env bash
# Runs a real engine behind the stack on this machine: llama.cpp's
# llama-server serving a GGUF file, one cmd/worker in front of it with
# native processing (the engine renders the GGUF's chat template,
# tokenizes and detokenizes: no Hugging Face files needed), and an
# OpenAI-compatible frontend on :8000 (HTTP_PORT to change it).
#
#   make run-llamacpp GGUF=path/to/model.gguf
#   make run-llamacpp            (a random-weight GGUF of the demo model)
#
# llama-server: $LLAMA_SERVER, else llama-server on PATH, else the one
# `make llama-server` built. Discovery is a temporary directory and
# requests go over TCP (no etcd or NATS). Ctrl-C stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
port=${HTTP_PORT:-8000}
gguf=${GGUF:-}

server=${LLAMA_SERVER:-}
if [ -z "$server" ]; then
	if command -v llama-server >/dev/null 2>&1; then
		server=$(command -v llama-server)
	elif [ -x "$(scripts/llama-server.sh --path)" ]; then
		server=$(scripts/llama-server.sh --path)
	else
		echo "no llama-server: build it with 'make llama-server' (minutes, once), put one on PATH, or set LLAMA_SERVER" >&2
		exit 1
	fi
fi

echo "building bin/frontend and bin/worker..."
"$GO" build -o bin/ ./cmd/frontend ./cmd/worker
if [ -z "$gguf" ]; then
	gguf=bin/demo.gguf
	echo "no GGUF=...: writing $gguf (random weights, the demo model's vocabulary and chat template)"
	"$GO" run ./internal/testgguf/cmd/testgguf -from models/demo -o "$gguf"
fi
if [ ! -f "$gguf" ]; then
	echo "GGUF=$gguf: no such file" >&2
	exit 1
fi
model=$(basename "$gguf")
model=${model%.gguf}

. scripts/lib/stack.sh

# llama-server binds a port of its choosing and says which.
echo "starting llama-server ($server) on $gguf..."
setsid "$server" -m "$gguf" --host 127.0.0.1 --port 0 --no-webui --metrics ${LLAMA_ARGS:-} >bin/llama-server.log 2>&1 &
pids+=($!)
url=
for i in $(seq 600); do
	url=$(sed -n 's/.*listening on \(http:\/\/[^ ]*\).*/\1/p' bin/llama-server.log | head -n 1)
	[ -n "$url" ] && break
	if ! kill -0 "${pids[0]}" 2>/dev/null; then
		echo "llama-server exited during start-up; its log:" >&2
		tail -n 20 bin/llama-server.log >&2
		exit 1
	fi
	sleep 0.1
done
if [ -z "$url" ]; then
	echo "llama-server did not say where it listens after 60s; its log:" >&2
	tail -n 20 bin/llama-server.log >&2
	exit 1
fi

setsid bin/worker --engine llamacpp --engine-url "$url" --native-framework-processing \
	--model-path "$gguf" >bin/worker.log 2>&1 &
pids+=($!)
setsid bin/frontend --http-port "$port" >bin/frontend.log 2>&1 &
pids+=($!)

echo "starting the worker and the frontend..."
for i in $(seq 1200); do
	if get /v1/models | grep -q "\"id\":\"$model\""; then
		break
	fi
	for p in "${pids[@]}"; do
		if ! kill -0 "$p" 2>/dev/null; then
			echo "a process exited during start-up (is port $port taken? HTTP_PORT=8001 make run-llamacpp picks another); the logs:" >&2
			tail -n 20 bin/llama-server.log bin/worker.log bin/frontend.log >&2
			exit 1
		fi
	done
	if ((i == 1200)); then
		echo "model $model not listed after 120s; logs:" >&2
		tail -n 20 bin/llama-server.log bin/worker.log bin/frontend.log >&2
		exit 1
	fi
	sleep 0.1
done

cat <<EOT

Serving model "$model" on http://localhost:$port (1 frontend, 1 worker, llama-server at $url).

Chat:
  curl -s localhost:$port/v1/chat/completions -H 'Content-Type: application/json' \\
    -d '{"model":"$model","messages":[{"role":"user","content":"Hello!"}],"max_tokens":20}'

Chat, streamed:
  curl -sN localhost:$port/v1/chat/completions -H 'Content-Type: application/json' \\
    -d '{"model":"$model","messages":[{"role":"user","content":"Hello!"}],"max_tokens":20,"stream":true}'

Logs: bin/llama-server.log, bin/worker.log, bin/frontend.log. Ctrl-C stops everything.
EOT

set +e
wait -n
status=$?
set -e
echo "a process exited (status $status); see bin/llama-server.log, bin/worker.log and bin/frontend.log" >&2
exit 1
