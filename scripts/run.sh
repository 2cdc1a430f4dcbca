#!/usr/bin/env bash
# Runs the stack on this machine: an OpenAI-compatible frontend on :8000
# (HTTP_PORT to change it; 0 for any free port, printed once bound) and
# two mocker workers serving models/demo, logging into LOG_DIR (bin);
# with MODE=disagg (make run-disagg) one prefill and two decode mocker
# workers instead (disaggregated serving, docs/disaggregation.md).
# Discovery is a temporary directory and requests go over TCP, so neither
# etcd nor NATS is needed. Ctrl-C stops everything and removes the
# directory. Needs bash and Go only (curl to try it out).
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
port=${HTTP_PORT:-8000}
logs=${LOG_DIR:-bin}
model=demo
mkdir -p "$logs"

echo "building bin/frontend and bin/mocker..."
"$GO" build -o bin/ ./cmd/frontend ./cmd/mocker

. scripts/lib/stack.sh

# Each in a session of its own: Ctrl-C reaches this script only, which
# then stops them (SIGTERM) and waits for them.
if [ "${MODE:-}" = disagg ]; then
	setsid bin/mocker --model-path models/demo --disaggregation-mode prefill --endpoint dyn://dynamo.prefill.generate \
		--bootstrap-ports 0 >"$logs/prefill.log" 2>&1 &
	pids+=($!)
	setsid bin/mocker --model-path models/demo --num-workers 2 --disaggregation-mode decode >"$logs/mocker.log" 2>&1 &
	pids+=($!)
	workers="1 prefill and 2 decode mocker workers"
else
	setsid bin/mocker --model-path models/demo --num-workers 2 >"$logs/mocker.log" 2>&1 &
	pids+=($!)
	workers="2 mocker workers"
fi
setsid bin/frontend --http-port "$port" >"$logs/frontend.log" 2>&1 &
pids+=($!)

echo "starting the frontend and $workers..."
for i in $(seq 300); do
	if [ "$port" = 0 ]; then # the port the frontend bound, from its log
		bound=$(sed -n 's/.*msg="frontend: listening" addr=[^ ]*:\([0-9][0-9]*\) .*/\1/p' "$logs/frontend.log" | head -n 1)
		port=${bound:-0}
	fi
	if [ "$port" != 0 ] && get /v1/models | grep -q "\"id\":\"$model\""; then
		break
	fi
	for p in "${pids[@]}"; do
		if ! kill -0 "$p" 2>/dev/null; then
			echo "a process exited during start-up (is port $port taken? HTTP_PORT=8001 make run picks another); the logs:" >&2
			tail -n 20 "$logs/frontend.log" "$logs/mocker.log" >&2
			exit 1
		fi
	done
	if ((i == 300)); then
		echo "model $model not listed after 30s; logs:" >&2
		tail -n 20 "$logs/frontend.log" "$logs/mocker.log" >&2
		exit 1
	fi
	sleep 0.1
done

cat <<EOF

Serving model "$model" on http://localhost:$port (1 frontend, $workers).

List the models:
  curl -s localhost:$port/v1/models

Chat:
  curl -s localhost:$port/v1/chat/completions -H 'Content-Type: application/json' \\
    -d '{"model":"$model","messages":[{"role":"user","content":"Hello!"}],"max_tokens":20}'

Chat, streamed:
  curl -sN localhost:$port/v1/chat/completions -H 'Content-Type: application/json' \\
    -d '{"model":"$model","messages":[{"role":"user","content":"Hello!"}],"max_tokens":20,"stream":true}'

Metrics: curl -s localhost:$port/metrics
Logs: $logs/frontend.log, $logs/mocker.log. The mocker's answers are ordinary
tokens of the demo model with no meaning. Ctrl-C stops everything.
EOF

# Run until Ctrl-C, or until a process exits on its own.
set +e
wait -n
status=$?
set -e
echo "a process exited (status $status); see $logs/frontend.log and $logs/mocker.log" >&2
exit 1
