package kvevents

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/dynamo-go/dynamo/pkg/kvblock"
)

// markerBase starts the block hashes of the handshake and sync markers:
// BlockRemoved events the tests publish to learn that the subscriber has
// caught up, and filter out of what they compare.
const markerBase = uint64(1) << 62

// testPub is an engine's ZmqEventPublisher as vLLM builds it: a PUB
// socket sending [topic, seq, payload] and, optionally, a ROUTER socket
// serving replays from a buffer of every batch published.
type testPub struct {
	t            *testing.T
	topic        string
	addr, replay string // endpoints (replay "" without a ROUTER)
	pub, router  zmq4.Socket
	done         chan struct{} // closed when the ROUTER's goroutine ends

	mu        sync.Mutex
	seq       uint64
	buffer    []replayed
	evictedTo uint64 // the replay buffer no longer holds batches below this
	marker    uint64
}

// startPub listens on addr ("" for a free port) and, with replay, on a
// second free port for the ROUTER.
func startPub(t *testing.T, addr string, replay bool) *testPub {
	t.Helper()
	p := &testPub{t: t, topic: "kv"}
	if addr == "" {
		addr = "tcp://127.0.0.1:0"
	}
	p.pub = zmq4.NewPub(t.Context())
	if err := p.pub.Listen(addr); err != nil {
		t.Fatal(err)
	}
	p.addr = "tcp://" + p.pub.Addr().String()
	if replay {
		p.router = zmq4.NewRouter(t.Context())
		if err := p.router.Listen("tcp://127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		p.replay = "tcp://" + p.router.Addr().String()
		p.done = make(chan struct{})
		go p.serveReplay()
	}
	t.Cleanup(p.close)
	return p
}

// serveReplay answers replay requests as vLLM's _service_replay does.
func (p *testPub) serveReplay() {
	defer close(p.done)
	for {
		msg, err := p.router.Recv()
		if err != nil {
			return
		}
		if len(msg.Frames) != 3 {
			continue
		}
		id, from := msg.Frames[0], binary.BigEndian.Uint64(msg.Frames[2])
		p.mu.Lock()
		var send []replayed
		for _, b := range p.buffer {
			if b.seq >= from && b.seq >= p.evictedTo {
				send = append(send, b)
			}
		}
		p.mu.Unlock()
		// A peer that left (a replay request given up) is not the
		// server's end: like a ZeroMQ ROUTER, drop what cannot be sent
		// to it and serve the next request.
		for _, b := range send {
			if p.router.Send(zmq4.NewMsgFrom(id, []byte{}, be(b.seq), b.payload)) != nil {
				break
			}
		}
		_ = p.router.Send(zmq4.NewMsgFrom(id, []byte{}, be(endSeq), []byte{}))
	}
}

// close stops the publisher (an engine going away).
func (p *testPub) close() {
	p.pub.Close()
	if p.router != nil {
		p.router.Close()
		<-p.done
		p.router = nil
	}
}

// publish sends one batch (the msgpack of v) under the next sequence
// number; with skipLive it only goes to the replay buffer (lost on the
// PUB socket).
func (p *testPub) publish(v any, skipLive bool) uint64 {
	p.t.Helper()
	payload, err := msgpack.Marshal(v)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	seq := p.seq
	p.seq++
	p.buffer = append(p.buffer, replayed{seq: seq, payload: payload})
	p.mu.Unlock()
	if !skipLive {
		p.raw([]byte(p.topic), be(seq), payload)
	}
	return seq
}

// raw sends frames as they are.
func (p *testPub) raw(frames ...[]byte) {
	p.t.Helper()
	if err := p.pub.Send(zmq4.NewMsgFrom(frames...)); err != nil {
		p.t.Fatal(err)
	}
}

// sync publishes markers until the subscriber has emitted one, then
// returns the events before it (markers left out). The first sync is the
// slow-joiner handshake: markers sent before the subscription took hold
// are lost.
func (p *testPub) sync(c *collector) []kvblock.KVCacheEvent {
	p.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		m := markerBase + p.marker
		p.marker++
		p.mu.Unlock()
		p.publish(batch(nil, removed(m)), false)
		for range 4 {
			if evs, ok := c.upTo(m); ok {
				return evs
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	p.t.Fatal("the subscriber never caught up")
	return nil
}

func be(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return b[:]
}

// batch builds a KVEventBatch as msgspec encodes it with array_like=True
// and omit_defaults=True: [ts, events], plus the rank when not nil.
func batch(rank *int, events ...any) []any {
	b := []any{1.7e9, events}
	if rank != nil {
		b = append(b, *rank)
	}
	return b
}

// stored builds a BlockStored as recent vLLM encodes it (array_like):
// the tag, block_hashes, parent_block_hash, token_ids, block_size, then
// lora_id, medium and lora_name (no defaults: always present), the
// defaulted extra_keys and later fields omitted.
func stored(hashes []any, parent any, tokens []uint32, blockSize int, medium, lora any) []any {
	t := make([]any, len(tokens))
	for i, x := range tokens {
		t[i] = x
	}
	return []any{"BlockStored", hashes, parent, t, blockSize, nil, medium, lora}
}

func removed(hashes ...any) []any {
	return []any{"BlockRemoved", hashes, "GPU"}
}

func cleared() []any { return []any{"AllBlocksCleared"} }

func intp(v int) *int { return &v }

func u64p(v uint64) *uint64 { return &v }

// collector records what Run emits.
type collector struct {
	t  *testing.T
	mu sync.Mutex
	ev []kvblock.KVCacheEvent
}

func (c *collector) emit(rank int, ev kvblock.KVCacheEvent) {
	if rank != int(ev.DPRank) {
		c.t.Errorf("emit rank %d for an event of rank %d", rank, ev.DPRank)
	}
	c.mu.Lock()
	c.ev = append(c.ev, ev)
	c.mu.Unlock()
}

func isMarker(ev kvblock.KVCacheEvent) bool {
	r := ev.Data.Removed
	return r != nil && len(r.BlockHashes) == 1 && r.BlockHashes[0] >= markerBase
}

// upTo returns the events before marker m, markers left out, and drops
// them and m from the record; ok is false until m was emitted.
func (c *collector) upTo(m uint64) (evs []kvblock.KVCacheEvent, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, ev := range c.ev {
		if isMarker(ev) && ev.Data.Removed.BlockHashes[0] == m {
			for _, e := range c.ev[:i] {
				if !isMarker(e) {
					evs = append(evs, e)
				}
			}
			c.ev = c.ev[i+1:]
			return evs, true
		}
	}
	return nil, false
}

// runSub runs a subscriber on cfg until the test ends. Its metrics are
// on their own registry.
func runSub(t *testing.T, cfg Config) (*collector, *Metrics, *ids) {
	t.Helper()
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Metrics = m
	w := &testWriter{t: t}
	cfg.Logger = slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if cfg.BlockSize == 0 {
		cfg.BlockSize = 4
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := &collector{t: t}
	seen := &ids{next: map[uint32]uint64{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.Run(ctx, func(rank int, ev kvblock.KVCacheEvent) {
			seen.check(t, ev)
			c.emit(rank, ev)
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Run did not return after its context ended")
		}
		w.stop()
	})
	return c, m, seen
}

// ids checks that every rank's event ids run 0, 1, 2, ... (markers
// included).
type ids struct {
	mu   sync.Mutex
	next map[uint32]uint64
}

func (x *ids) check(t *testing.T, ev kvblock.KVCacheEvent) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if want := x.next[ev.DPRank]; ev.EventID != want {
		t.Errorf("rank %d: event id %d, want %d", ev.DPRank, ev.EventID, want)
	}
	x.next[ev.DPRank] = ev.EventID + 1
}

func (x *ids) count(rank uint32) uint64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.next[rank]
}

// testWriter sends log lines to the test log until stopped (zmq4's
// goroutines may outlive Run by a moment).
type testWriter struct {
	t       *testing.T
	mu      sync.Mutex
	stopped bool
}

func (w *testWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.t.Logf("%s", b)
	}
	return len(b), nil
}

func (w *testWriter) stop() {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
}

// data strips event ids and ranks: what the tests compare.
func data(evs []kvblock.KVCacheEvent) []kvblock.EventData {
	out := make([]kvblock.EventData, len(evs))
	for i, ev := range evs {
		out[i] = ev.Data
	}
	return out
}

func block(hash uint64, tokens ...uint32) kvblock.StoredBlock {
	return kvblock.StoredBlock{BlockHash: hash, TokensHash: kvblock.LocalBlockHash(tokens)}
}

func counter(c prometheus.Collector) float64 { return testutil.ToFloat64(c) }

func TestRoundTrip(t *testing.T) {
	p := startPub(t, "", false)
	c, m, seen := runSub(t, Config{Endpoint: p.addr, Topic: "kv"})
	p.sync(c)

	digest := make([]byte, 32) // a sha256 digest as VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=0 sends it
	for i := range digest {
		digest[i] = byte(i)
	}
	parentDigest := make([]byte, 32)
	parentDigest[31] = 9
	big := uint64(1)<<63 + 5
	p.publish(batch(nil,
		stored([]any{uint64(11), uint64(12)}, nil, []uint32{1, 2, 3, 4, 5, 6, 7, 8}, 4, "GPU", nil),
		stored([]any{big, int64(-7)}, uint64(12), []uint32{9, 10, 11, 12, 13, 14, 15, 16}, 4, nil, nil),
		stored([]any{digest}, parentDigest, []uint32{17, 18, 19, 20}, 4, "GPU", nil),
		removed(uint64(11), digest),
		cleared(),
	), false)
	// The older layout (no medium or lora_name: the tuple stops after
	// lora_id) and the map layout (msgspec without array_like).
	p.publish(batch(intp(1),
		[]any{"BlockStored", []any{21}, nil, []any{1, 2, 3, 4}, 4, nil},
		map[string]any{"type": "BlockStored", "block_hashes": []any{22}, "parent_block_hash": 21,
			"token_ids": []any{5, 6, 7, 8}, "block_size": 4, "lora_id": nil, "medium": "GPU", "lora_name": nil, "extra_keys": nil},
		map[string]any{"type": "BlockRemoved", "block_hashes": []any{21}, "medium": nil},
		map[string]any{"type": "AllBlocksCleared"},
	), false)
	p.publish(map[string]any{"ts": 1.0, "events": []any{cleared()}, "data_parallel_rank": 2}, false)
	// A LoRA adapter's blocks hash with the adapter's salted seed.
	p.publish(batch(intp(2), stored([]any{31}, nil, []uint32{1, 2, 3, 4}, 4, "GPU", "sql-lora")), false)
	// Other tiers are skipped.
	p.publish(batch(nil, stored([]any{41}, nil, []uint32{1, 2, 3, 4}, 4, "CPU", nil), removed(uint64(12))), false)
	got := p.sync(c)

	want := []kvblock.EventData{
		kvblock.Stored(nil, block(11, 1, 2, 3, 4), block(12, 5, 6, 7, 8)),
		kvblock.Stored(u64p(12), block(big, 9, 10, 11, 12), block(uint64(1<<64-7), 13, 14, 15, 16)),
		kvblock.Stored(u64p(9), block(0x18191a1b1c1d1e1f, 17, 18, 19, 20)),
		kvblock.Removed(11, 0x18191a1b1c1d1e1f),
		kvblock.Cleared(),
		kvblock.Stored(nil, block(21, 1, 2, 3, 4)),
		kvblock.Stored(u64p(21), block(22, 5, 6, 7, 8)),
		kvblock.Removed(21),
		kvblock.Cleared(),
		kvblock.Cleared(),
		kvblock.Stored(nil, kvblock.StoredBlock{BlockHash: 31,
			TokensHash: kvblock.LocalBlockHashSeed([]uint32{1, 2, 3, 4}, kvblock.SaltedSeed("sql-lora", ""))}),
		kvblock.Removed(12),
	}
	if diff := cmp.Diff(want, data(got)); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	ranks := []uint32{0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 0}
	for i, ev := range got {
		if ev.DPRank != ranks[i] {
			t.Errorf("event %d: rank %d, want %d", i, ev.DPRank, ranks[i])
		}
	}
	if n := seen.count(1); n != 4 {
		t.Errorf("rank 1 has %d events, want 4 (ids 0-3)", n)
	}
	if n := seen.count(2); n != 2 {
		t.Errorf("rank 2 has %d events, want 2 (ids 0-1)", n)
	}
	if n := counter(m.skipped.WithLabelValues(reasonMedium)); n != 1 {
		t.Errorf("skipped{medium} = %v, want 1", n)
	}
	if n := counter(m.events.WithLabelValues(kvblock.KindStored)); n != 6 {
		t.Errorf("events{stored} = %v, want 6", n)
	}
	if n := counter(m.gaps.WithLabelValues(gapUnrecovered)); n != 0 {
		t.Errorf("gaps{unrecovered} = %v, want 0", n)
	}
}

func TestTopicFilter(t *testing.T) {
	p := startPub(t, "", false)
	c, _, _ := runSub(t, Config{Endpoint: p.addr, Topic: "kv"})
	p.sync(c)
	p.topic = "other"
	p.raw([]byte("other"), be(999), []byte{0xc1}) // not subscribed: never seen
	p.topic = "kv"
	if got := p.sync(c); len(got) != 0 {
		t.Fatalf("got %v", got)
	}
}

func TestGapFilledByReplay(t *testing.T) {
	p := startPub(t, "", true)
	c, m, _ := runSub(t, Config{Endpoint: p.addr, ReplayEndpoint: p.replay})
	p.sync(c)

	p.publish(batch(nil, removed(uint64(1))), false)
	p.publish(batch(nil, removed(uint64(2))), true) // lost on the PUB socket
	p.publish(batch(nil, removed(uint64(3))), true)
	p.publish(batch(nil, removed(uint64(4))), false)
	got := p.sync(c)
	want := []kvblock.EventData{kvblock.Removed(1), kvblock.Removed(2), kvblock.Removed(3), kvblock.Removed(4)}
	if diff := cmp.Diff(want, data(got)); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	if n := counter(m.gaps.WithLabelValues(gapReplayed)); n != 1 {
		t.Errorf("gaps{replayed} = %v, want 1", n)
	}
	if n := counter(m.gaps.WithLabelValues(gapUnrecovered)); n != 0 {
		t.Errorf("gaps{unrecovered} = %v, want 0", n)
	}
}

func TestJoinFetchesHistory(t *testing.T) {
	p := startPub(t, "", true)
	// Published before anyone subscribed: only the replay buffer has them.
	p.publish(batch(nil, removed(uint64(1))), false)
	p.publish(batch(nil, removed(uint64(2))), false)
	c, m, _ := runSub(t, Config{Endpoint: p.addr, ReplayEndpoint: p.replay})
	got := p.sync(c)
	want := []kvblock.EventData{kvblock.Removed(1), kvblock.Removed(2)}
	if diff := cmp.Diff(want, data(got)); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	if n := counter(m.gaps.WithLabelValues(gapReplayed)) + counter(m.gaps.WithLabelValues(gapUnrecovered)); n != 0 {
		t.Errorf("joining counted %v gaps", n)
	}
}

func TestGapUnrecoverable(t *testing.T) {
	for _, replay := range []bool{true, false} {
		t.Run(fmt.Sprintf("replay=%v", replay), func(t *testing.T) {
			p := startPub(t, "", replay)
			c, m, _ := runSub(t, Config{Endpoint: p.addr, ReplayEndpoint: p.replay})
			p.sync(c)

			p.publish(batch(nil, removed(uint64(1))), false)
			lost := p.publish(batch(nil, removed(uint64(2))), true)
			p.mu.Lock()
			p.evictedTo = lost + 1 // the engine's buffer has moved past it
			p.mu.Unlock()
			p.publish(batch(nil, removed(uint64(3))), true) // replayed, when there is a replay
			p.publish(batch(nil, removed(uint64(4))), false)
			got := p.sync(c)
			want := []kvblock.EventData{kvblock.Removed(1), kvblock.Removed(3), kvblock.Removed(4)}
			if !replay {
				want = []kvblock.EventData{kvblock.Removed(1), kvblock.Removed(4)}
			}
			if diff := cmp.Diff(want, data(got)); diff != "" {
				t.Fatalf("events (-want +got):\n%s", diff)
			}
			if n := counter(m.gaps.WithLabelValues(gapUnrecovered)); n != 1 {
				t.Errorf("gaps{unrecovered} = %v, want 1", n)
			}
		})
	}
}

func TestGarbageIsSkipped(t *testing.T) {
	p := startPub(t, "", false)
	c, m, _ := runSub(t, Config{Endpoint: p.addr})
	p.sync(c)

	p.raw([]byte("kv"), be(0))                        // two frames
	p.raw([]byte("kv"), []byte{0, 0, 0, 1}, []byte{}) // a 4-byte sequence
	p.raw([]byte("kv"), be(1), []byte{0xc1}, nil)     // four frames
	p.publish([]byte{0xc1, 0x00}, false)              // a msgpack bin, not a batch
	p.mu.Lock()
	seq := p.seq
	p.seq++
	p.mu.Unlock()
	p.raw([]byte(p.topic), be(seq), []byte{0x92, 0xc1}) // invalid msgpack
	p.publish(batch(nil,
		[]any{"BlockMoved", []any{1}},
		removed(uint64(5)),
		[]any{"BlockStored", []any{6}, nil, []any{1, 2, 3}, 4, nil, "GPU", nil},    // 3 tokens for one block of 4
		[]any{"BlockStored", []any{7}, nil, []any{1, 2, 3, 4}, 8, nil, "GPU", nil}, // another block size
		[]any{"BlockStored", []any{8}},                                             // too short
		[]any{"BlockRemoved", []any{"not", []any{}}},                               // a hash that is no hash
		42,
	), false)
	p.publish(batch(nil, removed(uint64(9))), false)
	got := p.sync(c)
	want := []kvblock.EventData{kvblock.Removed(5), kvblock.Removed(9)}
	if diff := cmp.Diff(want, data(got)); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	for reason, n := range map[string]float64{reasonFrames: 3, reasonDecode: 2, reasonEvent: 4, reasonBlockSize: 2} {
		if got := counter(m.skipped.WithLabelValues(reason)); got != n {
			t.Errorf("skipped{%s} = %v, want %v", reason, got, n)
		}
	}
	if n := counter(m.gaps.WithLabelValues(gapUnrecovered)); n != 0 {
		t.Errorf("gaps{unrecovered} = %v, want 0 (garbage with a sequence still counts)", n)
	}
}

func TestPublisherRestart(t *testing.T) {
	old := dialRetry
	dialRetry = 20 * time.Millisecond
	t.Cleanup(func() { dialRetry = old })

	p := startPub(t, "", false)
	c, m, _ := runSub(t, Config{Endpoint: p.addr})
	p.sync(c)
	p.publish(batch(nil, stored([]any{1}, nil, []uint32{1, 2, 3, 4}, 4, "GPU", nil)), false)
	p.publish(batch(intp(1), removed(uint64(2))), false)
	for range 200 { // a sequence well past what the restarted engine's handshake will use
		p.publish(batch(nil), false)
	}
	if got := p.sync(c); len(got) != 2 {
		t.Fatalf("before the restart: %v", got)
	}

	p.close()
	p = startPub(t, p.addr, false) // the engine restarts on the same port, from sequence 0
	p.publish(batch(nil, removed(uint64(3))), false)
	got := p.sync(c)
	// The handshake's first markers may be lost (slow joiner), so the
	// removal may or may not arrive; both ranks are cleared first.
	want := []kvblock.EventData{kvblock.Cleared(), kvblock.Cleared()}
	if len(got) < 2 {
		t.Fatalf("after the restart: %v", got)
	}
	if diff := cmp.Diff(want, data(got[:2])); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	if got[0].DPRank != 0 || got[1].DPRank != 1 {
		t.Errorf("cleared ranks %d, %d; want 0, 1", got[0].DPRank, got[1].DPRank)
	}
	if n := counter(m.restarts); n != 1 {
		t.Errorf("publisher_restarts = %v, want 1", n)
	}
	if n := counter(m.reconnects); n < 1 {
		t.Errorf("reconnects = %v, want at least 1", n)
	}
}

func TestHashFromBytes(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		want uint64
	}{
		{nil, 0},
		{[]byte{1, 2}, 0x0102},
		{[]byte{1, 2, 3, 4, 5, 6, 7, 8}, 0x0102030405060708},
		{[]byte{0xff, 1, 2, 3, 4, 5, 6, 7, 8}, 0x0102030405060708},
	} {
		if got := HashFromBytes(tc.in); got != tc.want {
			t.Errorf("HashFromBytes(%x) = %#x, want %#x", tc.in, got, tc.want)
		}
	}
}

func TestNewChecksConfig(t *testing.T) {
	for _, cfg := range []Config{
		{BlockSize: 4},
		{Endpoint: "tcp://127.0.0.1:1"},
		{Endpoint: "tcp://127.0.0.1:1", BlockSize: 4, DefaultDPRank: -1},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
}

func TestRankEndpoint(t *testing.T) {
	for _, c := range []struct {
		in   string
		rank int
		want string
	}{
		{"tcp://127.0.0.1:5557", 0, "tcp://127.0.0.1:5557"},
		{"tcp://127.0.0.1:5557", 3, "tcp://127.0.0.1:5560"},
		{"tcp://[::1]:5557", 1, "tcp://[::1]:5558"},
		{"", 2, ""},
		{"ipc:///tmp/kv", 0, "ipc:///tmp/kv"},
	} {
		if got, err := RankEndpoint(c.in, c.rank); err != nil || got != c.want {
			t.Errorf("RankEndpoint(%q, %d) = %q, %v; want %q", c.in, c.rank, got, err, c.want)
		}
	}
	for _, in := range []string{"ipc:///tmp/kv", "tcp://host", "tcp://host:65535"} {
		if got, err := RankEndpoint(in, 1); err == nil {
			t.Errorf("RankEndpoint(%q, 1) = %q, want an error", in, got)
		}
	}
}
