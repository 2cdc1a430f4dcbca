# Two commands on a fresh machine (Go installed): `make run`, `make test`.
GO      ?= go
BIN     := bin
PKGS    := ./...

.PHONY: build run run-disagg run-llamacpp llama-server demo-gguf bench-llamacpp images test test-short bench bench-tokenizer bench-preprocess bench-stack bench-conversations bench-streams trace-demo fuzz lint clean

build:
	$(GO) build $(PKGS)
	$(GO) build -o $(BIN)/hello ./examples/hello
	$(GO) build -o $(BIN)/worker ./cmd/worker

# The stack on this machine: a frontend on :8000 and two mocker workers
# serving models/demo (file discovery, TCP request plane, no etcd or NATS
# needed). Ctrl-C stops it.
run:
	@exec env GO="$(GO)" ./scripts/run.sh

# The same with one prefill and two decode mocker workers (disaggregated
# serving, docs/disaggregation.md).
run-disagg:
	@exec env GO="$(GO)" MODE=disagg ./scripts/run.sh

# llama.cpp's llama-server (CPU), built from the source the npm package
# node-llama-cpp ships, into ~/.cache/dynamo-go/llama.cpp (keyed by the
# package's version; a second run takes no time). The tests that run a
# real engine use it; without it they skip and say so. Needs npm, git,
# cmake, ninja and g++ (Debian: apt-get install npm git cmake ninja-build g++).
llama-server:
	@./scripts/llama-server.sh

# A random-weight GGUF of the demo model's vocabulary and chat template
# (test support, internal/testgguf): what make run-llamacpp serves when
# no GGUF is given. Its answers are real tokens with no meaning.
demo-gguf:
	@mkdir -p $(BIN)
	$(GO) run ./internal/testgguf/cmd/testgguf -from models/demo -o $(BIN)/demo.gguf

# A real engine behind the stack: llama-server serving GGUF (default: the
# demo GGUF above), one cmd/worker in native processing in front of it
# (no Hugging Face files: the engine renders, tokenizes, detokenizes) and
# the frontend on :8000. llama-server: $$LLAMA_SERVER, else on PATH, else
# the one make llama-server builds.
GGUF ?=
run-llamacpp:
	@exec env GO="$(GO)" GGUF="$(GGUF)" ./scripts/run-llamacpp.sh

# Container images of frontend, mocker and worker (deploy/docker), tagged
# $(IMAGE_PREFIX)/NAME:$(IMAGE_TAG), with --version stamped from git.
# Needs a Docker engine with BuildKit.
IMAGE_PREFIX ?= dynamo-go
IMAGE_TAG    ?= dev
VERSION      ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT       ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)

images:
	@command -v docker >/dev/null 2>&1 || { \
		echo "make images: no docker command: building the images needs a Docker engine with BuildKit (docker buildx)."; \
		echo "  The docker build line is in deploy/docker/Dockerfile; go test ./deploy/docker checks what can be checked without an engine."; \
		exit 1; }
	@docker info >/dev/null 2>&1 || { echo "make images: docker cannot reach a Docker engine (docker info failed); start one, or set DOCKER_HOST."; exit 1; }
	@docker buildx version >/dev/null 2>&1 || { echo "make images: docker buildx (BuildKit) is missing: the Dockerfile uses RUN --mount caches."; exit 1; }
	@for t in frontend mocker worker; do \
		echo "docker buildx build --target $$t -t $(IMAGE_PREFIX)/$$t:$(IMAGE_TAG) ."; \
		docker buildx build --load -f deploy/docker/Dockerfile --target $$t \
			--build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) \
			-t $(IMAGE_PREFIX)/$$t:$(IMAGE_TAG) . || exit 1; \
	done

# The tests of deployment files (they render the Helm chart, load the
# Compose file, parse the Dockerfile, and run the binaries' --help) run
# without the race detector: it finds nothing in them and makes compiling
# the Helm, Kubernetes and Compose libraries three times slower (cold
# cache, go test ./deploy/...: 6m11s with -race, 2m18s without). Every
# other package runs with it; each package runs once.
NORACE_PKGS := ./deploy/docker ./deploy/compose ./deploy/helm

test: lint
	$(GO) test -race -count=1 -timeout 20m $$($(GO) list $(PKGS) | grep -v -x $(foreach p,$(NORACE_PKGS),-e 'github.com/dynamo-go/dynamo/$(p:./%=%)'))
	$(GO) test -count=1 -timeout 20m $(NORACE_PKGS)

test-short:
	$(GO) test -short -count=1 $(PKGS)

# Benchmarks of the request planes; results go in docs/benchmarks.md.
bench:
	$(GO) test -run='^$$' -bench=. -benchmem -count=5 ./pkg/runtime/ ./pkg/runtime/internal/...

# The tokenizer against Hugging Face's (npm tokenizers, one thread) on the
# same corpus, in the same run. Needs node and npm; see docs/benchmarks.md.
bench-tokenizer:
	$(GO) test -run='^$$' -bench='EncodeChunks|FromFile|DecodeStream' -benchmem -cpu 1 ./pkg/preprocessor/tokenizer/
	cd scripts/tokenizer && npm install --no-audit --no-fund >/dev/null && node bench.mjs

bench-preprocess:
	$(GO) test -run='^$$' -bench='220KB|DecoderStep|RenderChat' -benchtime=3s ./pkg/preprocessor/ ./pkg/preprocessor/template/
	cd scripts/tokenizer && npm install --no-audit --no-fund >/dev/null && node bench_preprocess.mjs --runs 50

# What the stack adds to a request: cmd/bench against a bare net/http
# server streaming the same tokens, then against frontend + two mockers.
bench-stack:
	./scripts/bench-stack.sh 500 5000

# Long conversations (30 turns growing to 60,000 tokens) with the frontend's
# conversation cache off and on: frontend CPU per turn and turns/s.
bench-conversations:
	./scripts/bench-conversations.sh

# The stack in front of a real engine (llama-server): K streams straight
# to the engine and through frontend + worker, same engine, same run; and
# KV routing against round-robin over two engines on shared prefixes.
bench-llamacpp:
	./scripts/bench-llamacpp.sh all

# Many concurrent long streams through one frontend: its memory, open
# files and CPU (scripts/bench-streams.sh N OSL WORKERS).
bench-streams:
	./scripts/bench-streams.sh 2000 400 4

# A real Jaeger (built once from the Go module proxy) receiving the
# stack's traces; one request's trace read back from its query API.
trace-demo:
	./scripts/trace-demo.sh

fuzz:
	$(GO) test -run='^$$' -fuzz=FuzzReadMessage -fuzztime=30s ./pkg/runtime/internal/codec/
	$(GO) test -run='^$$' -fuzz=FuzzReadStreamMessage -fuzztime=30s ./pkg/runtime/internal/codec/

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

clean:
	rm -rf $(BIN)
