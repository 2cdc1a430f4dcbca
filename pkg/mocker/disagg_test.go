package mocker

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/backend/backendtest"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// A prefill engine answers any request with exactly one output: the first
// token, finish length, usage and disaggregated_params naming it; the
// answer comes after the prefill and the KV transfer, both sped up.
func TestPrefillAnswersOnceAfterTheTransfer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, pub := startEngine(t, func(c *Config) {
			c.DisaggregationMode = ModePrefill
			c.SpeedupRatio = 10
			c.KVBytesPerToken = 1 << 20 // 1 MiB a token
			c.KVTransferBandwidth = 1   // 1 GB/s: 100 tokens take 104.8576 ms
		})
		defer stopEngine(t, e)
		var c collector
		start := time.Now()
		if err := e.Generate(t.Context(), request(prompt(0, 100), 50, 1), c.emit); err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		if len(c.outs) != 1 {
			t.Fatalf("%d outputs, want exactly one", len(c.outs))
		}
		o := c.outs[0]
		if !o.IsTerminal() || o.FinishReason.Kind != backend.FinishLength || len(o.TokenIDs) != 1 {
			t.Fatalf("output %+v, want one token with finish length", o)
		}
		want := &backend.Usage{PromptTokens: 100, CompletionTokens: 1, TotalTokens: 101, PromptTokensDetails: &backend.PromptDetail{}}
		if diff := cmp.Diff(want, o.CompletionUsage); diff != "" {
			t.Errorf("usage (-want +got):\n%s", diff)
		}
		var params backend.DisaggregatedParams
		if err := json.Unmarshal(o.DisaggregatedParams, &params); err != nil || params.WorkerID == nil ||
			*params.WorkerID != (backend.PrefillWorker{PrefillWorkerID: 42, PrefillDPRank: 0}) {
			t.Fatalf("disaggregated_params %s (%v), want worker 42 rank 0", o.DisaggregatedParams, err)
		}
		transfer := time.Duration(100 * (1 << 20)) // ns: 100 MiB at 1 GB/s
		if want := (prefillTime(100) + transfer) / 10; took < want-time.Millisecond || took > want+time.Millisecond {
			t.Errorf("took %v, want about %v (prefill %v + transfer %v, sped up 10x)", took, want, prefillTime(100)/10, transfer/10)
		}
		if events, _, _ := pub.snapshot(); len(events) == 0 {
			t.Error("a prefill engine published no KV events")
		}
	})
}

// A stopped prefill ends cancelled during the transfer.
func TestPrefillStoppedDuringTheTransfer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := startEngine(t, func(c *Config) {
			c.DisaggregationMode = ModePrefill
			c.KVBytesPerToken, c.KVTransferBandwidth = 1<<20, 1
		})
		defer stopEngine(t, e)
		rc := runtime.NewContext(t.Context(), "p")
		defer rc.Release()
		go func() {
			time.Sleep(prefillTime(100) + time.Millisecond)
			rc.Stop()
		}()
		var c collector
		if err := e.Generate(rc, request(prompt(0, 100), 1, 1), c.emit); err != nil {
			t.Fatal(err)
		}
		if fin := c.terminal(t); fin.FinishReason.Kind != backend.FinishCancelled || fin.DisaggregatedParams != nil {
			t.Fatalf("terminal %+v, want cancelled without disaggregated_params", fin)
		}
	})
}

// A decode engine charges no prefill for a handed-over request, a full
// one for a bare request (decode-only fallback), and publishes no KV
// events.
func TestDecodeChargesPrefillOnlyForBareRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, pub := startEngine(t, func(c *Config) { c.DisaggregationMode = ModeDecode })
		defer stopEngine(t, e)
		idle := decodeTime(2*64, 16384*64)
		for _, tc := range []struct {
			name    string
			adapt   func(*backend.Request)
			want    time.Duration
			cached  int
			hitRate float32
		}{
			{"bare", func(*backend.Request) {}, prefillTime(100) + 5*idle, 0, 0},
			{"prefill result", func(r *backend.Request) {
				r.PrefillResult = &backend.PrefillResult{DisaggregatedParams: json.RawMessage(`{"worker_id":{"prefill_worker_id":1,"prefill_dp_rank":0}}`),
					PromptTokensDetails: json.RawMessage(`{"cached_tokens":64}`)}
			}, 5 * idle, 64, 0},
		} {
			req := request(prompt(1000, 100), 5, 1)
			tc.adapt(req)
			var c collector
			start := time.Now()
			if err := e.Generate(t.Context(), req, c.emit); err != nil {
				t.Fatal(err)
			}
			if got := time.Since(start); got < tc.want-time.Millisecond || got > tc.want+time.Millisecond {
				t.Errorf("%s: took %v, want about %v", tc.name, got, tc.want)
			}
			if n := len(c.tokens()); n != 5 {
				t.Errorf("%s: %d tokens, want 5", tc.name, n)
			}
			if got := c.terminal(t).CompletionUsage.PromptTokensDetails.CachedTokens; got != tc.cached {
				t.Errorf("%s: cached tokens %d, want %d", tc.name, got, tc.cached)
			}
		}
		if events, _, loads := pub.snapshot(); len(events) != 0 || len(loads) == 0 {
			t.Errorf("a decode engine published %d KV events and %d loads; want none and some", len(events), len(loads))
		}
	})
}

// bootstrapPair starts a prefill engine with a bootstrap server on
// loopback and a decode engine, both sped up 100x.
func bootstrapPair(t *testing.T) (prefill, decode *Engine, port int) {
	t.Helper()
	prefill, decode = testEngine(t, func(c *Config) {
		c.DisaggregationMode, c.BootstrapAddr, c.SpeedupRatio = ModePrefill, "127.0.0.1:0", 100
	}), testEngine(t, func(c *Config) { c.DisaggregationMode, c.SpeedupRatio = ModeDecode, 100 })
	pcfg, err := prefill.Start(t.Context(), 7)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decode.Start(t.Context(), 8); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopEngine(t, prefill); stopEngine(t, decode) })
	if pcfg.BootstrapPort == 0 {
		t.Fatal("Start reported no bootstrap port")
	}
	return prefill, decode, pcfg.BootstrapPort
}

// run generates req on e in the background and returns the result.
func runAsync(ctx context.Context, e *Engine, req *backend.Request) <-chan *collector {
	done := make(chan *collector, 1)
	go func() {
		c := &collector{}
		if err := e.Generate(ctx, req, c.emit); err != nil {
			c.outs = append(c.outs, backend.Failed(err.Error()))
		}
		done <- c
	}()
	return done
}

func TestBootstrapRendezvousEitherOrder(t *testing.T) {
	prefill, decode, port := bootstrapPair(t)
	info := func(room uint64) *backend.BootstrapInfo {
		return &backend.BootstrapInfo{Host: "127.0.0.1", Port: port, Room: room}
	}
	withInfo := func(r *backend.Request, room uint64) *backend.Request { r.BootstrapInfo = info(room); return r }

	// Decode first: it waits until the prefill of its room is done.
	dec := runAsync(t.Context(), decode, withInfo(request(prompt(0, 100), 4, 1), 11))
	select {
	case c := <-dec:
		t.Fatalf("decode ended before its prefill: %+v", c.outs)
	case <-time.After(200 * time.Millisecond):
	}
	pre := runAsync(t.Context(), prefill, withInfo(request(prompt(0, 100), 4, 1), 11))
	for _, ch := range []<-chan *collector{pre, dec} {
		select {
		case c := <-ch:
			if fin := c.terminal(t); fin.FinishReason.Kind != backend.FinishLength {
				t.Fatalf("terminal %+v", fin)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no answer within 10 s")
		}
	}
	// Prefill first: the finished room is remembered.
	if c := <-runAsync(t.Context(), prefill, withInfo(request(prompt(0, 100), 4, 1), 12)); len(c.outs) != 1 {
		t.Fatalf("prefill outputs %+v", c.outs)
	}
	select {
	case c := <-runAsync(t.Context(), decode, withInfo(request(prompt(0, 100), 4, 1), 12)):
		if n := len(c.tokens()); n != 4 || c.terminal(t).FinishReason.Kind != backend.FinishLength {
			t.Fatalf("decode after its prefill: %d tokens, outputs %+v", n, c.outs)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("decode after a finished prefill did not end within 10 s")
	}
}

func TestBootstrapWaitEndsWithTheRequest(t *testing.T) {
	_, decode, port := bootstrapPair(t)
	req := func() *backend.Request {
		r := request(prompt(0, 10), 4, 1)
		r.BootstrapInfo = &backend.BootstrapInfo{Host: "127.0.0.1", Port: port, Room: 99}
		return r
	}
	// Killed: Generate returns the cause at once.
	rc := runtime.NewContext(context.Background(), "k")
	defer rc.Release()
	dec := runAsync(rc, decode, req())
	time.Sleep(50 * time.Millisecond)
	rc.Kill()
	select {
	case c := <-dec:
		if fin := c.terminal(t); fin.FinishReason.Kind != backend.FinishError || !strings.Contains(fin.FinishReason.Message, "kill") {
			t.Fatalf("killed wait ended with %+v", fin)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("a killed request kept waiting for its prefill")
	}
	// Stopped: a cancelled terminal.
	rc2 := runtime.NewContext(context.Background(), "s")
	defer rc2.Release()
	dec = runAsync(rc2, decode, req())
	time.Sleep(50 * time.Millisecond)
	rc2.Stop()
	select {
	case c := <-dec:
		if fin := c.terminal(t); fin.FinishReason.Kind != backend.FinishCancelled {
			t.Fatalf("stopped wait ended with %+v", fin)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("a stopped request kept waiting for its prefill")
	}
	if !decode.IsQuiescent() {
		t.Error("decode engine busy after the waits ended")
	}
}

func TestBootstrapFailures(t *testing.T) {
	s, err := listenBootstrap("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	s.log = testEngine(t, nil).cfg.Logger
	s.timeout = 300 * time.Millisecond
	done := make(chan struct{})
	go func() { defer close(done); s.serve() }()
	defer func() {
		if err := s.close(); err != nil {
			t.Error(err)
		}
		<-done
	}()
	info := &backend.BootstrapInfo{Host: "127.0.0.1", Port: s.port(), Room: 5}
	never := make(chan struct{})

	// The client's own timeout.
	err = waitForPrefill(t.Context(), info, 100*time.Millisecond, never)
	if !errors.Is(err, ErrBootstrap) || !strings.Contains(err.Error(), "no answer within 100ms") {
		t.Errorf("client timeout: %v", err)
	}
	// The server gives up on a room that never finishes.
	err = waitForPrefill(t.Context(), info, 5*time.Second, never)
	if !errors.Is(err, ErrBootstrap) || !strings.Contains(err.Error(), "closed without an ACK") {
		t.Errorf("server timeout: %v", err)
	}
	// A failed prefill closes at once.
	info.Room = 6
	go func() { time.Sleep(50 * time.Millisecond); s.complete(6, false) }()
	start := time.Now()
	err = waitForPrefill(t.Context(), info, 5*time.Second, never)
	if !errors.Is(err, ErrBootstrap) || time.Since(start) > 250*time.Millisecond {
		t.Errorf("failed prefill: %v after %v", err, time.Since(start))
	}
	// A finished room acks, however often it is asked.
	s.complete(7, true)
	info.Room = 7
	for range 2 {
		if err := waitForPrefill(t.Context(), info, 5*time.Second, never); err != nil {
			t.Errorf("finished room: %v", err)
		}
	}
	// Nobody listening.
	info.Port = closedPort(t)
	if err := waitForPrefill(t.Context(), info, time.Second, never); !errors.Is(err, ErrBootstrap) || !strings.Contains(err.Error(), "connect") {
		t.Errorf("no server: %v", err)
	}
}

// closedPort returns a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	s, err := listenBootstrap("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	p := s.port()
	if err := s.ln.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBootstrapServerForgetsOldRooms(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &bootstrapServer{timeout: bootstrapTimeout, memory: roomMemory, rooms: map[uint64]*room{}}
		s.complete(1, true)
		s.room(2) // never finishes
		time.Sleep(roomMemory + time.Second)
		s.complete(3, true)
		if _, ok := s.rooms[1]; ok || len(s.rooms) != 2 {
			t.Fatalf("after %v: rooms %v, want 2 and 3", roomMemory, s.rooms)
		}
		time.Sleep(bootstrapTimeout + time.Second)
		s.room(4)
		if _, ok := s.rooms[2]; ok {
			t.Fatal("an unfinished room older than its waiters' timeout is kept")
		}
	})
}

// The conformance kit holds for a decode engine, with bare and with
// handed-over requests.
func TestConformanceDecode(t *testing.T) {
	newEngine := func(t *testing.T) backend.Engine {
		cfg := DefaultConfig()
		cfg.SpeedupRatio = 100
		cfg.DisaggregationMode = ModeDecode
		e, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	t.Run("bare", func(t *testing.T) { backendtest.Run(t, newEngine) })
	t.Run("handed over", func(t *testing.T) {
		backendtest.Run(t, newEngine, backendtest.WithRequest(func(r *backend.Request) {
			r.PrefillResult = &backend.PrefillResult{DisaggregatedParams: json.RawMessage(`{}`)}
		}))
	})
}

func TestKVBytesPerToken(t *testing.T) {
	for _, tc := range []struct {
		name, config, dtype string
		want                int
		err                 error
	}{
		{"llama-8b", `{"num_hidden_layers":32,"num_key_value_heads":8,"num_attention_heads":32,"hidden_size":4096,"torch_dtype":"bfloat16"}`, "auto", 32 * 2 * 8 * 128 * 2, nil},
		{"head_dim given", `{"num_hidden_layers":28,"num_key_value_heads":8,"num_attention_heads":16,"head_dim":128,"hidden_size":1024,"torch_dtype":"bfloat16"}`, "", 28 * 2 * 8 * 128 * 2, nil},
		{"no kv heads: MHA", `{"num_hidden_layers":2,"num_attention_heads":4,"hidden_size":64,"torch_dtype":"float32"}`, "auto", 2 * 2 * 4 * 16 * 4, nil},
		{"fp8 cache", `{"num_hidden_layers":32,"num_key_value_heads":8,"num_attention_heads":32,"hidden_size":4096}`, "fp8", 32 * 2 * 8 * 128, nil},
		{"no dtype: 2 bytes", `{"num_hidden_layers":1,"num_key_value_heads":1,"head_dim":8}`, "auto", 1 * 2 * 1 * 8 * 2, nil},
		{"text_config", `{"text_config":{"num_hidden_layers":4,"num_key_value_heads":2,"head_dim":64,"dtype":"float16"}}`, "auto", 4 * 2 * 2 * 64 * 2, nil},
		{"demo model", `{"max_position_embeddings":4096,"model_type":"demo","vocab_size":512}`, "auto", 0, ErrNoKVShape},
	} {
		got, err := KVBytesPerToken([]byte(tc.config), tc.dtype)
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("%s: %d, %v; want %d, %v", tc.name, got, err, tc.want, tc.err)
		}
	}
	if _, err := KVBytesPerToken([]byte(`{"num_hidden_layers":1,"num_key_value_heads":1,"head_dim":8}`), "int3"); err == nil {
		t.Error("an unknown dtype was accepted")
	}
}

func TestDisaggregationConfig(t *testing.T) {
	for _, tc := range []struct {
		mut  func(*Config)
		want string
	}{
		{func(c *Config) { c.DisaggregationMode = "encode" }, "disaggregation mode"},
		{func(c *Config) { c.BootstrapAddr = "127.0.0.1:0" }, "needs the prefill mode"},
		{func(c *Config) { c.DisaggregationMode, c.BootstrapAddr = ModePrefill, "nope" }, "bootstrap address"},
		{func(c *Config) { c.KVTransferBandwidth = -1 }, "kv_transfer_bandwidth"},
		{func(c *Config) { c.KVBytesPerToken = -1 }, "kv_bytes_per_token"},
	} {
		c := DefaultConfig()
		tc.mut(&c)
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate = %v, want %q", err, tc.want)
		}
	}
	c := DefaultConfig()
	c.DisaggregationMode, c.BootstrapAddr = ModePrefill, "127.0.0.1:0"
	if err := c.Validate(); err != nil {
		t.Errorf("a prefill engine with a bootstrap address: %v", err)
	}
	if d := DefaultConfig(); d.KVTransferBandwidth != 64 || d.DisaggregationMode != ModeAggregated {
		t.Errorf("defaults: bandwidth %v, mode %q", d.KVTransferBandwidth, d.DisaggregationMode)
	}
}
