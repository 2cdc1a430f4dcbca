package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/backend/worker"
	"github.com/dynamo-go/dynamo/pkg/mocker"
	"github.com/dynamo-go/dynamo/pkg/mocker/modeldir"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/runtime/runtimetest"
)

// adapterDir makes a directory the mocker loads an adapter from.
func adapterDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, mocker.LoraConfigFile), []byte(`{"r": 8}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// metric sums the samples of a metric family whose labels include
// labels.
func metric(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			match := true
			for k, v := range labels {
				match = match && have[k] == v
			}
			if match {
				sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

// A mocker worker started with --lora-adapters sql=...,law=... and
// --max-loras 1 publishes both adapters, serves each (the answers differ
// from the base model's and from each other's), swapping them in the
// engine, counted; an adapter unloaded through the lora endpoint is
// refused afterwards.
func TestMockerServesLoraAdaptersWithMaxLoras(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	env := map[string]string{"ETCD_ENDPOINTS": etcd.URL, "DYN_TCP_RPC_HOST": "127.0.0.1", "DYN_SYSTEM_PORT": "-1"}
	c, code, done := configure([]string{"--model-path", demoModel, "--deterministic", "--speedup-ratio", "100",
		"--lora-adapters", "sql=file://" + adapterDir(t) + ",law=" + adapterDir(t), "--max-loras", "1"},
		func(k string) string { return env[k] }, io.Discard)
	if done {
		t.Fatalf("configure: exit %d", code)
	}
	if c.worker.MaxLoras != 1 || len(c.worker.Loras) != 2 || c.mocker.LoraLoadTime != 50*time.Millisecond {
		t.Fatalf("worker %+v / mocker load time %s", c.worker, c.mocker.LoraLoadTime)
	}
	log := slog.New(slog.DiscardHandler)
	mcfg := c.mocker
	if _, err := modeldir.Fill(t.Context(), &mcfg, c.worker, "auto", nil, log); err != nil {
		t.Fatal(err)
	}
	eng, err := mocker.New(mcfg)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	rt := runtimetest.Start(t, c.runtime, runtime.Deps{Registry: reg})
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- worker.Run(ctx, rt, eng, c.worker) }()
	t.Cleanup(func() {
		cancel()
		if err := <-runErr; err != nil {
			t.Errorf("worker.Run: %v", err)
		}
	})

	caller := runtimetest.Start(t, c.runtime, runtime.Deps{})
	testenv.WaitFor(t, 20*time.Second, "the base card and both adapters' cards", func() bool {
		kvs, err := caller.Store().List(t.Context(), "v1/mdc/dynamo/backend/generate/")
		return err == nil && len(kvs) == 3
	})
	if swaps := metric(t, reg, "dynamo_worker_lora_swaps_total", nil); swaps != 1 {
		t.Fatalf("after loading two adapters under --max-loras 1: %v swaps, want 1", swaps)
	}
	cl, err := caller.Endpoint(c.worker.Endpoint).Client(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "the worker's instance", func() bool { return len(cl.InstanceIDs()) == 1 })
	answer := func(lora string) ([]uint32, error) {
		req := backend.Request{Model: "demo", TokenIDs: []uint32{1, 2, 3, 4}, StopConditions: backend.StopConditions{MaxTokens: backend.Ptr(uint32(6))}}
		if lora != "" {
			req.Routing = &backend.Routing{LoraName: backend.Ptr(lora)}
		}
		payload, _ := json.Marshal(req)
		var toks []uint32
		rc := runtime.NewContext(t.Context(), "")
		defer rc.Release()
		err := cl.Call(rc, cl.InstanceIDs()[0], payload, func(item []byte) error {
			var o backend.Output
			if err := json.Unmarshal(item, &o); err != nil {
				return err
			}
			toks = append(toks, o.TokenIDs...)
			return nil
		})
		return toks, err
	}
	got := map[string][]uint32{}
	for _, lora := range []string{"", "sql", "law", "sql"} {
		toks, err := answer(lora)
		if err != nil {
			t.Fatalf("request for %q: %v", lora, err)
		}
		if prev, ok := got[lora]; ok && !slices.Equal(prev, toks) {
			t.Fatalf("%q answered %v then %v", lora, prev, toks)
		}
		got[lora] = toks
	}
	if slices.Equal(got[""], got["sql"]) || slices.Equal(got[""], got["law"]) || slices.Equal(got["sql"], got["law"]) {
		t.Fatalf("answers %v: want base, sql and law to differ", got)
	}
	// sql was swapped out when law loaded; serving sql, law, sql swapped
	// three more times.
	if swaps := metric(t, reg, "dynamo_worker_lora_swaps_total", nil); swaps != 4 {
		t.Fatalf("swaps %v, want 4", swaps)
	}
	if held, active := metric(t, reg, "dynamo_worker_lora_adapters", map[string]string{"state": "held"}),
		metric(t, reg, "dynamo_worker_lora_adapters", map[string]string{"state": "active"}); held != 2 || active != 1 {
		t.Fatalf("adapters held %v active %v, want 2 and 1", held, active)
	}

	// Unload sql through the lora endpoint.
	lc, err := caller.Endpoint(runtime.EndpointID{Namespace: "dynamo", Component: "backend", Name: modelcard.LoraEndpoint}).Client(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "the lora endpoint", func() bool { return len(lc.InstanceIDs()) == 1 })
	payload, _ := json.Marshal(modelcard.LoraRequest{Op: modelcard.LoraUnload, Name: "sql"})
	var res modelcard.LoraResult
	rc := runtime.NewContext(t.Context(), "")
	defer rc.Release()
	if err := lc.Call(rc, lc.InstanceIDs()[0], payload, func(item []byte) error { return json.Unmarshal(item, &res) }); err != nil {
		t.Fatal(err)
	}
	if len(res.Adapters) != 1 || res.Adapters[0].Name != "law" {
		t.Fatalf("after unloading sql: %+v, want law only", res.Adapters)
	}
	if _, err := answer("sql"); err == nil || !strings.Contains(err.Error(), `"sql" is not loaded on this worker`) {
		t.Fatalf("request for an unloaded adapter: %v", err)
	}
}

// A killed mocker's adapter cards leave discovery with its lease.
func TestMockerLoraCardsLeaveWithTheLease(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	etcd := testenv.StartEtcd(t)
	env := []string{"ETCD_ENDPOINTS=" + etcd.URL, "ETCD_LEASE_TTL=2", "DYN_TCP_RPC_HOST=127.0.0.1", "DYN_LOG=warn"}
	p := startMocker(t, env, "--model-path", demoModel, "--speedup-ratio", "100", "--lora-adapters", "sql-expert=file://"+adapterDir(t))
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{etcd.URL}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	suffix := "/" + modelcard.LoraSuffix("sql-expert")
	testenv.WaitFor(t, 30*time.Second, "the adapter's card", func() bool {
		return slices.ContainsFunc(keys(t, cli, "v1/mdc/dynamo/backend/generate/"), func(k string) bool { return strings.HasSuffix(k, suffix) })
	})
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	testenv.WaitFor(t, 15*time.Second, "the killed worker's lease to take its cards", func() bool {
		return len(keys(t, cli, "v1/mdc/")) == 0
	})
}
