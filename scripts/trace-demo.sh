#!/usr/bin/env bash
# trace-demo.sh runs a real Jaeger (github.com/jaegertracing/jaeger
# cmd/jaeger, built from the Go module proxy as a tool of a scratch module,
# cached under ~/.cache/dynamo-go), the stack exporting its traces to it
# over OTLP (the frontend over gRPC, the mocker over HTTP), sends one chat
# request with a traceparent of its own, and reads the trace back from
# Jaeger's query API. It prints the span tree and fails unless it is the
# tree docs/observability.md describes (and TestTracing checks against
# an in-process receiver):
#
#   POST /v1/chat/completions > preprocess > template.render, tokenize
#   POST /v1/chat/completions > migration.attempt > route > runtime.handle
#     > engine.generate
#
# Usage: scripts/trace-demo.sh          (KEEP=1 leaves everything running:
#                                        Jaeger's UI on http://127.0.0.1:16686)
# Ports (loopback; environment to change them): HTTP_PORT 8400,
# JAEGER_OTLP_GRPC 4317, JAEGER_OTLP_HTTP 4318, JAEGER_UI 16686.
# Needs Go, curl and jq. The first run builds Jaeger: a few minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
JAEGER_VERSION=v1.76.0
port=${HTTP_PORT:-8400}
grpc_port=${JAEGER_OTLP_GRPC:-4317}
http_port=${JAEGER_OTLP_HTTP:-4318}
ui_port=${JAEGER_UI:-16686}

cache=${XDG_CACHE_HOME:-$HOME/.cache}/dynamo-go/jaeger-$JAEGER_VERSION
jaeger=$cache/jaeger
if [ ! -x "$jaeger" ]; then
  echo "building Jaeger $JAEGER_VERSION (once; cached in $cache)..."
  mkdir -p "$cache/mod"
  (cd "$cache/mod" && { [ -f go.mod ] || go mod init dynamo-go/jaeger-tool >/dev/null 2>&1; } &&
    go get -tool "github.com/jaegertracing/jaeger/cmd/jaeger@$JAEGER_VERSION" &&
    go build -o "$jaeger" github.com/jaegertracing/jaeger/cmd/jaeger)
fi
go build -o bin/ ./cmd/frontend ./cmd/mocker

work=$(mktemp -d)
pids=()
cleanup() {
  if [ -n "${KEEP:-}" ] && [ "${1:-}" = ok ]; then
    echo "left running (KEEP=1): Jaeger UI http://127.0.0.1:$ui_port, the API on :$port; kill ${pids[*]} to stop"
    return
  fi
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

cat >"$work/jaeger.yaml" <<YAML
service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:$ui_port
    grpc:
      endpoint: 127.0.0.1:0
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 10000
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:$grpc_port
      http:
        endpoint: 127.0.0.1:$http_port
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
YAML
"$jaeger" --config "$work/jaeger.yaml" >"$work/jaeger.log" 2>&1 &
pids+=($!)

export DYN_DISCOVERY_BACKEND=file DYN_FILE_KV="$work/kv" DYN_REQUEST_PLANE=tcp DYN_LOG=warn
export DYN_TCP_RPC_HOST=127.0.0.1 DYN_TCP_RESPONSE_STREAM_HOST=127.0.0.1
export DYN_HTTP_GRACEFUL_SHUTDOWN_TIMEOUT_SECS=0 DYN_GRACEFUL_SHUTDOWN_GRACE_PERIOD_SECS=0
export OTEL_EXPORT_ENABLED=1 OTEL_BSP_SCHEDULE_DELAY=100
OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$http_port OTEL_SERVICE_NAME=dynamo-worker \
  bin/mocker --model-path models/demo --num-workers 1 >"$work/mocker.log" 2>&1 &
pids+=($!)
OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$grpc_port OTEL_EXPORTER_OTLP_INSECURE=true OTEL_SERVICE_NAME=dynamo-frontend \
  bin/frontend --http-host 127.0.0.1 --http-port "$port" --migration-limit 1 >"$work/frontend.log" 2>&1 &
pids+=($!)

for i in $(seq 600); do
  curl -fsS "http://127.0.0.1:$port/v1/models" 2>/dev/null | grep -q '"demo"' &&
    curl -fsS "http://127.0.0.1:$ui_port/api/services" >/dev/null 2>&1 && break
  if ((i == 600)); then
    echo "the stack or Jaeger did not start; logs:" >&2
    tail -n 20 "$work"/*.log >&2
    exit 1
  fi
  sleep 0.1
done

trace=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
parent=$(od -An -tx1 -N8 /dev/urandom | tr -d ' \n')
echo "sending a chat request with traceparent 00-$trace-$parent-01"
curl -fsS "http://127.0.0.1:$port/v1/chat/completions" -H 'Content-Type: application/json' \
  -H "traceparent: 00-$trace-$parent-01" \
  -d '{"model":"demo","messages":[{"role":"user","content":"Hello, tracing!"}],"max_tokens":12,"stream":true}' >/dev/null

# Jaeger's query API: spans with operationName, references (CHILD_OF the
# parent's spanID) and the process's serviceName.
want=(
  "dynamo-frontend POST /v1/chat/completions <- (client $parent)"
  "dynamo-frontend preprocess <- POST /v1/chat/completions"
  "dynamo-frontend template.render <- preprocess"
  "dynamo-frontend tokenize <- preprocess"
  "dynamo-frontend migration.attempt <- POST /v1/chat/completions"
  "dynamo-frontend route <- migration.attempt"
  "dynamo-worker runtime.handle <- route"
  "dynamo-worker engine.generate <- runtime.handle"
)
got=""
for _ in $(seq 100); do
  if curl -fsS "http://127.0.0.1:$ui_port/api/traces/$trace" >"$work/trace.json" 2>/dev/null &&
    [ "$(jq '.data[0].spans | length' "$work/trace.json")" -ge ${#want[@]} ]; then
    got=$(jq -r --arg p "$parent" '.data[0] as $t
      | ($t.spans | map({key: .spanID, value: .operationName}) | from_entries) as $names
      | $t.spans[]
      | (.references | map(select(.refType == "CHILD_OF")) | .[0].spanID // "") as $ref
      | "\($t.processes[.processID].serviceName) \(.operationName) <- \(if $ref == $p then "(client \($p))" else ($names[$ref] // "(missing \($ref))") end)"' \
      "$work/trace.json" | sort)
    break
  fi
  sleep 0.2
done
echo "trace $trace as Jaeger has it (service, span <- parent):"
echo "${got:-(nothing)}" | sed 's/^/  /'
missing=0
for w in "${want[@]}"; do
  if ! grep -qxF "$w" <<<"$got"; then
    echo "MISSING: $w" >&2
    missing=1
  fi
done
if ((missing)); then
  echo "the trace is not the expected tree; logs in $work" >&2
  trap - EXIT
  exit 1
fi
jq -r '.data[0].spans[] | select(.operationName == "engine.generate") | .tags[]
  | select(.key | test("^(model|input_tokens|output_tokens|ttft_ms|itl_p50_ms|finish_reason)$")) | "  engine.generate \(.key)=\(.value)"' "$work/trace.json"
echo "OK: one trace from the HTTP request to the engine, read back from Jaeger (http://127.0.0.1:$ui_port/trace/$trace)"
cleanup ok
trap - EXIT
