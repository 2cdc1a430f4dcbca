package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/backend/worker"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/pipeline"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/runtime/discovery"
	"github.com/dynamo-go/dynamo/pkg/runtime/runtimetest"
)

// sharedModels holds real model files in the shared folder beside the
// repository (../shared); it is not part of it.
var sharedModels = filepath.Join("..", "..", "..", "shared", "testdata", "models")

// badFileWorker publishes the demo model's card, as a worker would, and
// serves its files endpoint with every file corrupted (same size, one byte
// changed): a worker whose files do not match its card.
func badFileWorker(t *testing.T, rt *runtime.DistributedRuntime) {
	t.Helper()
	card, err := modelcard.FromDir(demoModel, modelcard.Options{Name: "demo", Source: demoModel,
		ContextLength: 4096, KVCacheBlockSize: 16, ModelTypes: []string{"chat", "completions"},
		Runtime: modelcard.RuntimeConfig{TotalKVBlocks: 100, MaxNumSeqs: 8}})
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string][]byte{}
	for _, f := range card.Files() {
		b := bytes.Clone(f.Bytes())
		b[len(b)/2] ^= 1
		bad[f.Checksum] = b
	}
	ep := runtime.EndpointID{Namespace: "dynamo", Component: "backend", Name: modelcard.FilesEndpoint}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = rt.Endpoint(ep).Serve(ctx, runtime.HandlerFunc(func(_ *runtime.Context, payload []byte, emit func([]byte) error) error {
			var req modelcard.FileRequest
			if err := json.Unmarshal(payload, &req); err != nil {
				return err
			}
			b := bad[req.Checksum]
			item, _ := json.Marshal(modelcard.FileChunk{Size: int64(len(b)), Data: b})
			return emit(item)
		}))
	}()
	t.Cleanup(func() { cancel(); <-done })
	rec, err := modelcard.NewRecord("dynamo", "backend", "generate", rt.InstanceID(), card)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(rec)
	if err := rt.Store().Put(t.Context(), rec.Key(), b); err != nil {
		t.Fatal(err)
	}
}

// A model is listed only once its files are loaded. Files from a worker
// whose contents do not match the card are refused, clearly logged, and
// fetched from another worker of the model.
func TestModelFilesComeFromAWorkerWhoseFilesMatch(t *testing.T) {
	var logs testenv.Buffer
	mem := discovery.NewMemSpace()
	reg, err := pipeline.New(pipeline.Config{}, pipeline.Deps{Runtime: startRuntime(t, mem),
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- reg.Run(ctx) }()
	defer func() { cancel(); <-done }()

	badFileWorker(t, startRuntime(t, mem))
	testenv.WaitFor(t, 10*time.Second, "the bad worker's files to be refused", func() bool {
		return bytes.Contains([]byte(logs.String()), []byte("cannot load the model's files"))
	})
	if !bytes.Contains([]byte(logs.String()), []byte("checksum")) {
		t.Errorf("the refusal does not say the checksum did not match:\n%s", logs.Tail(10))
	}
	if m := reg.Lookup("demo"); m != nil || len(reg.Models()) != 0 {
		t.Fatal("the model is listed although its files are not loaded")
	}

	stop := make(chan struct{})
	rt := startRuntime(t, mem)
	wctx, wcancel := context.WithCancel(context.Background())
	wdone := make(chan error, 1)
	go func() {
		wdone <- worker.Run(wctx, rt, &echoEngine{name: "demo"}, worker.Config{ModelPath: demoModel, ModelTypes: []string{"chat", "completions"}})
	}()
	defer func() { wcancel(); <-wdone; close(stop) }()
	testenv.WaitFor(t, 20*time.Second, "the model, with files from the good worker", func() bool {
		m := reg.Lookup("demo")
		return m != nil && m.Ready()
	})
	m := reg.Lookup("demo")
	if got := m.Card().TokenizerJSON.Bytes(); len(got) == 0 {
		t.Fatal("the served model has no tokenizer")
	}
	if len(m.Instances()) != 1 || m.Instances()[0].ID != rt.InstanceID() {
		t.Errorf("instances %v, want the good worker only (the bad one serves no generate endpoint)", m.Instances())
	}
	if n, _ := generate(t, m); n != 2 {
		t.Errorf("generated %d tokens, want 2", n)
	}
}

// Every model under ../shared/testdata/models with a tokenizer.json is
// served through an etcd with its default limits, and nothing written to
// etcd exceeds 1 MiB.
func TestEveryTestModelThroughStockEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("loads every shared test model; skipped with -short")
	}
	entries, err := os.ReadDir(sharedModels)
	if err != nil {
		t.Skipf("shared model test data not available (%s): %v", sharedModels, err)
	}
	var models []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(sharedModels, e.Name(), modelcard.FileTokenizer)); err == nil {
			models = append(models, e.Name())
		}
	}
	etcd := testenv.StartEtcd(t)
	cfg := runtime.Config{Discovery: runtime.DiscoveryEtcd, EtcdEndpoints: []string{etcd.URL}, TCPHost: "127.0.0.1", GracePeriod: -1}

	// Watch every write, as etcd sees it.
	watcher := runtimetest.Start(t, cfg, runtime.Deps{})
	wctx, wcancel := context.WithCancel(context.Background())
	events, err := watcher.Store().Watch(wctx, "v1/")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	largest, largestKey := 0, ""
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for ev := range events {
			mu.Lock()
			if ev.Type == discovery.EventPut && len(ev.Value) > largest {
				largest, largestKey = len(ev.Value), ev.Key
			}
			mu.Unlock()
		}
	}()
	defer func() { wcancel(); <-watched }()

	reg, err := pipeline.New(pipeline.Config{}, pipeline.Deps{Runtime: runtimetest.Start(t, cfg, runtime.Deps{})})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- reg.Run(ctx) }()
	defer func() { cancel(); <-done }()

	for _, name := range models {
		rt := runtimetest.Start(t, cfg, runtime.Deps{})
		dir := filepath.Join(sharedModels, name)
		wctx, wcancel := context.WithCancel(context.Background())
		wdone := make(chan error, 1)
		start := time.Now()
		go func() {
			wdone <- worker.Run(wctx, rt, &echoEngine{name: name}, worker.Config{ModelPath: dir, ModelTypes: []string{"completions"}})
		}()
		t.Cleanup(func() {
			wcancel()
			if err := <-wdone; err != nil {
				t.Errorf("worker %s: %v", name, err)
			}
		})
		testenv.WaitFor(t, 60*time.Second, "model "+name+" to be served", func() bool { return reg.Lookup(name) != nil })
		card := reg.Lookup(name).Card()
		t.Logf("%-32s files %9d bytes, served %v after its worker started", name, card.Size(), time.Since(start).Round(time.Millisecond))
	}
	if got := len(reg.Models()); got != len(models) {
		t.Errorf("%d models served, want %d", got, len(models))
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("largest value written to etcd: %d bytes (%s)", largest, largestKey)
	if largest == 0 || largest > 1<<20 {
		t.Errorf("largest value written to etcd is %d bytes, want (0, 1 MiB]", largest)
	}
}
