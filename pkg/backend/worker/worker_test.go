package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/backend/worker"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/runtime/discovery"
	"github.com/dynamo-go/dynamo/pkg/runtime/runtimetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const demoModel = "../../../models/demo"

var testEP = runtime.EndpointID{Namespace: "test", Component: "backend", Name: "generate"}

// scripted is an engine whose behaviour the test sets: it emits token i
// for i in [0, max_tokens) and ends with Length, honouring stop and kill.
type scripted struct {
	startErr      error
	bootstrapPort int // reported by Start
	delay         time.Duration
	dropAfter     int  // return ErrDropStream after this many tokens
	afterTerminal bool // break the contract: emit after the terminal

	mu       sync.Mutex
	cleanups int
	aborted  []string
	log      []string
}

func (e *scripted) note(s string) {
	e.mu.Lock()
	e.log = append(e.log, s)
	e.mu.Unlock()
}

func (e *scripted) Start(context.Context, uint64) (backend.Config, error) {
	e.note("start")
	if e.startErr != nil {
		return backend.Config{}, e.startErr
	}
	return backend.Config{Model: "scripted-model", ContextLength: 4096, KVBlockSize: 16, TotalKVBlocks: 100, BootstrapPort: e.bootstrapPort}, nil
}

func (e *scripted) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	n := req.MaxTokens(8)
	for i := range n {
		if backend.IsStopped(ctx) {
			return emit(backend.Cancelled().WithUsage(len(req.TokenIDs), i))
		}
		if e.dropAfter > 0 && i == e.dropAfter {
			return backend.ErrDropStream
		}
		if err := emit(backend.Tokens(uint32(i))); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(e.delay):
		}
	}
	e.note("finished")
	if err := emit(backend.Length().WithUsage(len(req.TokenIDs), n)); err != nil {
		return err
	}
	if e.afterTerminal {
		return emit(backend.Tokens(99))
	}
	return nil
}

func (e *scripted) Cleanup(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cleanups++
	e.log = append(e.log, "cleanup")
	return nil
}

func (e *scripted) Abort(_ context.Context, id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.aborted = append(e.aborted, id)
}

// harness runs a worker runtime serving eng and a caller runtime.
type harness struct {
	worker, caller *runtime.DistributedRuntime
	client         *runtime.Client
	stopWorker     context.CancelFunc
	runErr         chan error
}

func newHarness(t *testing.T, eng backend.Engine, cfg worker.Config) *harness {
	t.Helper()
	mem := discovery.NewMemSpace()
	h := &harness{runErr: make(chan error, 1)}
	h.worker = startRuntime(t, mem)
	h.caller = startRuntime(t, mem)
	cfg.Endpoint = testEP
	if cfg.ModelPath == "" {
		cfg.ModelPath = demoModel
	}
	cfg.ValidateStreams = true
	ctx, cancel := context.WithCancel(context.Background())
	h.stopWorker = cancel
	go func() { h.runErr <- worker.Run(ctx, h.worker, eng, cfg) }()
	t.Cleanup(func() { cancel(); <-h.runErr })
	return h
}

func (h *harness) connect(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	cl, err := h.caller.Endpoint(testEP).Client(ctx)
	if err == nil {
		_, err = cl.WaitForInstances(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	h.client = cl
}

func startRuntime(t *testing.T, mem *discovery.MemSpace) *runtime.DistributedRuntime {
	t.Helper()
	return runtimetest.Start(t, runtime.Config{Discovery: runtime.DiscoveryMem, TCPHost: "127.0.0.1", SystemPort: runtime.SystemPortDisabled, GracePeriod: 100 * time.Millisecond}, runtime.Deps{MemSpace: mem})
}

// generate sends req and returns the outputs received.
func (h *harness) generate(rc *runtime.Context, req backend.Request, onOutput func(*backend.Output)) ([]*backend.Output, error) {
	payload, _ := json.Marshal(req)
	var outs []*backend.Output
	err := h.client.Call(rc, h.client.InstanceIDs()[0], payload, func(item []byte) error {
		var o backend.Output
		if err := json.Unmarshal(item, &o); err != nil {
			return err
		}
		outs = append(outs, &o)
		if onOutput != nil {
			onOutput(&o)
		}
		return nil
	})
	return outs, err
}

func request(maxTokens uint32) backend.Request {
	return backend.Request{Model: "scripted-model", TokenIDs: []uint32{1, 2, 3}, StopConditions: backend.StopConditions{MaxTokens: &maxTokens}}
}

// decodeCard reads a published model record and its verified card.
// loadFiles fetches the card's files from the worker's files endpoint, as
// a frontend does, and loads them (checking sizes and checksums).
func loadFiles(t *testing.T, caller *runtime.DistributedRuntime, card *modelcard.Card) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, err := caller.Endpoint(runtime.EndpointID{Namespace: "test", Component: "backend", Name: modelcard.FilesEndpoint}).Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := c.WaitForInstances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = card.Load(ctx, func(ctx context.Context, f *modelcard.File) ([]byte, error) {
		var data []byte
		req, _ := json.Marshal(modelcard.FileRequest{Checksum: f.Checksum})
		rc := runtime.NewContext(ctx, "")
		defer rc.Release()
		err := c.Call(rc, ids[0], req, func(item []byte) error {
			var chunk modelcard.FileChunk
			if err := json.Unmarshal(item, &chunk); err != nil {
				return err
			}
			data = append(data, chunk.Data...)
			return nil
		})
		return data, err
	})
	if err != nil {
		t.Fatalf("loading the card's files from the files endpoint: %v", err)
	}
}

func decodeCard(t *testing.T, b []byte) *modelcard.Card {
	t.Helper()
	rec, err := modelcard.DecodeRecord(b)
	if err != nil {
		t.Fatalf("record: %v", err)
	}
	if rec.Namespace != "test" || rec.Component != "backend" || rec.Endpoint != "generate" || rec.InstanceID == 0 {
		t.Fatalf("record %+v does not name the endpoint and instance", rec)
	}
	card, err := rec.DecodeCard()
	if err != nil {
		t.Fatalf("card: %v", err)
	}
	return card
}

func TestWorkerServesAndPublishesTheCard(t *testing.T) {
	eng := &scripted{}
	h := newHarness(t, eng, worker.Config{MigrationLimit: 3, Aliases: []string{"alias-a"}})
	h.connect(t)

	kvs, err := h.caller.Store().List(t.Context(), "v1/mdc/test/backend/generate/")
	if err != nil || len(kvs) != 1 {
		t.Fatalf("model cards = %d, %v; want 1", len(kvs), err)
	}
	card := decodeCard(t, kvs[0].Value)
	if card.DisplayName != "scripted-model" || card.MigrationLimit != 3 || !slices.Contains(card.Names(), "alias-a") {
		t.Fatalf("card = name %q, migration limit %d, names %v", card.DisplayName, card.MigrationLimit, card.Names())
	}
	if card.KVCacheBlockSize != 16 || card.ContextLength != 4096 {
		t.Fatalf("card block size %d / context %d, want the engine's 16 / 4096", card.KVCacheBlockSize, card.ContextLength)
	}

	outs, err := h.generate(runtime.NewContext(t.Context(), ""), request(5), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 6 || !outs[5].IsTerminal() || outs[5].FinishReason.Kind != backend.FinishLength {
		t.Fatalf("got %d outputs, last %+v; want 5 tokens then a length terminal", len(outs), outs[len(outs)-1])
	}
	if u := outs[5].CompletionUsage; u == nil || u.PromptTokens != 3 || u.CompletionTokens != 5 {
		t.Fatalf("usage = %+v", u)
	}
}

func TestCustomChatTemplateReplacesTheModels(t *testing.T) {
	custom := filepath.Join(t.TempDir(), "custom.jinja")
	const tmpl = "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}"
	if err := os.WriteFile(custom, []byte(tmpl), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, &scripted{}, worker.Config{ChatTemplateFile: custom})
	h.connect(t)
	kvs, err := h.caller.Store().List(t.Context(), "v1/mdc/test/backend/generate/")
	if err != nil || len(kvs) != 1 {
		t.Fatalf("model cards = %d, %v; want 1", len(kvs), err)
	}
	card := decodeCard(t, kvs[0].Value)
	if card.Loaded() {
		t.Fatal("the published card carries its files; they belong on the files endpoint")
	}
	loadFiles(t, h.caller, card)
	if ct := card.ChatTemplate; ct == nil || ct.Source != modelcard.TemplateCustom || ct.Select(false) != tmpl {
		t.Fatalf("chat template %+v, want the custom file", card.ChatTemplate)
	}
}

func TestStopEndsWithCancelledAndAborts(t *testing.T) {
	eng := &scripted{delay: 5 * time.Millisecond}
	h := newHarness(t, eng, worker.Config{})
	h.connect(t)
	rc := runtime.NewContext(t.Context(), "stop-1")
	outs, err := h.generate(rc, request(10000), func(o *backend.Output) {
		if len(o.TokenIDs) == 1 && o.TokenIDs[0] == 3 {
			rc.Stop()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	last := outs[len(outs)-1]
	if !last.IsTerminal() || last.FinishReason.Kind != backend.FinishCancelled {
		t.Fatalf("last output %+v, want a cancelled terminal", last)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		eng.mu.Lock()
		aborted := slices.Clone(eng.aborted)
		eng.mu.Unlock()
		if len(aborted) == 1 && aborted[0] == "stop-1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("aborted = %v, want [stop-1]", aborted)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestDroppedStreamLooksLikeACrash(t *testing.T) {
	h := newHarness(t, &scripted{dropAfter: 2}, worker.Config{})
	h.connect(t)
	outs, err := h.generate(runtime.NewContext(t.Context(), ""), request(10), nil)
	if !errors.Is(err, runtime.ErrDisconnected) || len(outs) != 2 {
		t.Fatalf("got %d outputs and %v; want 2 then Disconnected", len(outs), err)
	}
}

func TestContractViolationFailsLoudly(t *testing.T) {
	h := newHarness(t, &scripted{afterTerminal: true}, worker.Config{})
	h.connect(t)
	_, err := h.generate(runtime.NewContext(t.Context(), ""), request(2), nil)
	if err == nil || !strings.Contains(err.Error(), "contract") {
		t.Fatalf("an output after the terminal = %v, want a contract violation", err)
	}
}

func TestStartFailureCleansUpAndSaysWhy(t *testing.T) {
	eng := &scripted{startErr: errors.New("no GPU")}
	mem := discovery.NewMemSpace()
	rt := startRuntime(t, mem)
	err := worker.Run(t.Context(), rt, eng, worker.Config{Endpoint: testEP, ModelPath: demoModel})
	if !errors.Is(err, worker.ErrStartFailed) || !strings.Contains(err.Error(), "no GPU") {
		t.Fatalf("Run = %v, want ErrStartFailed with the reason", err)
	}
	if eng.cleanups != 1 {
		t.Fatalf("cleanups = %d, want 1", eng.cleanups)
	}
}

func TestShutdownUnregistersDrainsThenCleansUp(t *testing.T) {
	eng := &scripted{delay: 2 * time.Millisecond}
	h := newHarness(t, eng, worker.Config{})
	h.connect(t)
	result := make(chan error, 1)
	var outs []*backend.Output
	started := make(chan struct{})
	go func() {
		var err error
		outs, err = h.generate(runtime.NewContext(context.Background(), ""), request(200), func(o *backend.Output) {
			if len(o.TokenIDs) == 1 && o.TokenIDs[0] == 0 {
				close(started)
			}
		})
		result <- err
	}()
	<-started
	h.stopWorker()
	// Card and instance leave discovery at once.
	deadline := time.Now().Add(2 * time.Second)
	for {
		cards, _ := h.caller.Store().List(t.Context(), "v1/mdc/")
		if len(cards) == 0 && len(h.client.InstanceIDs()) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after shutdown: %d cards, %d instances still registered", len(cards), len(h.client.InstanceIDs()))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := <-result; err != nil || len(outs) != 201 {
		t.Fatalf("in-flight stream during shutdown: %d outputs, %v; want all 201", len(outs), err)
	}
	if err := <-h.runErr; err != nil {
		t.Fatalf("Run = %v", err)
	}
	h.runErr <- nil // for the cleanup
	eng.mu.Lock()
	defer eng.mu.Unlock()
	if eng.cleanups != 1 || eng.log[len(eng.log)-1] != "cleanup" || !slices.Contains(eng.log, "finished") {
		t.Fatalf("engine log %v, want the stream finished before the single cleanup", eng.log)
	}
}
