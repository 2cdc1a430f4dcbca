package vllmapi

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/google/go-cmp/cmp"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/kvblock"
	"github.com/dynamo-go/dynamo/pkg/mocker"
)

// waitSubscribed waits until every rank's PUB socket knows a subscription:
// what the ranks publish from then on reaches the subscribers.
func waitSubscribed(t *testing.T, s *Server) {
	t.Helper()
	for r, rp := range s.kv.ranks {
		testenv.WaitFor(t, 5*time.Second, fmt.Sprintf("a subscription at rank %d's publisher", r), func() bool {
			return len(rp.pub.(zmq4.Topics).Topics()) > 0
		})
	}
}

// kv is a decoded map with its keys in wire order.
type kv struct {
	keys []string
	vals map[string]any
}

// decode reads one msgpack value generically: arrays as []any, maps as
// kv (keys in order), integers as uint64 or int64, strings, floats, nil.
func decode(d *msgpack.Decoder) (any, error) {
	c, err := d.PeekCode()
	if err != nil {
		return nil, err
	}
	switch {
	case c == 0xdc || c == 0xdd || (c >= 0x90 && c <= 0x9f):
		n, err := d.DecodeArrayLen()
		if err != nil {
			return nil, err
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = decode(d); err != nil {
				return nil, err
			}
		}
		return out, nil
	case c == 0xde || c == 0xdf || (c >= 0x80 && c <= 0x8f):
		n, err := d.DecodeMapLen()
		if err != nil {
			return nil, err
		}
		m := kv{vals: map[string]any{}}
		for range n {
			k, err := d.DecodeString()
			if err != nil {
				return nil, err
			}
			v, err := decode(d)
			if err != nil {
				return nil, err
			}
			m.keys = append(m.keys, k)
			m.vals[k] = v
		}
		return m, nil
	case c == 0xcb:
		return d.DecodeFloat64()
	case c <= 0x7f || (c >= 0xcc && c <= 0xcf):
		return d.DecodeUint64()
	case c >= 0xd0 && c <= 0xd3 || c >= 0xe0:
		return d.DecodeInt64()
	}
	return d.DecodeInterface()
}

func decodePayload(t *testing.T, b []byte) []any {
	t.Helper()
	d := msgpack.NewDecoder(bytes.NewReader(b))
	v, err := decode(d)
	if err != nil {
		t.Fatal(err)
	}
	arr, ok := v.([]any)
	if !ok || len(arr) != 3 {
		t.Fatalf("batch is not a 3-array: %#v", v)
	}
	if _, ok := arr[0].(float64); !ok {
		t.Fatalf("ts is %T", arr[0])
	}
	return arr
}

func uints(v []uint32) []any {
	out := make([]any, len(v))
	for i, x := range v {
		out[i] = uint64(x)
	}
	return out
}

func hashes(v ...uint64) []any {
	out := make([]any, len(v))
	for i, x := range v {
		out[i] = x
	}
	return out
}

func TestEncodeBatchLayouts(t *testing.T) {
	parent := uint64(1 << 63)
	events := []mocker.KVEvent{
		{RouterEvent: kvblock.RouterEvent{Event: kvblock.KVCacheEvent{Data: kvblock.Stored(&parent,
			kvblock.StoredBlock{BlockHash: 7}, kvblock.StoredBlock{BlockHash: 1<<64 - 1})}}, Tokens: []uint32{1, 2, 3, 4, 70000, 6, 7, 8}},
		{RouterEvent: kvblock.RouterEvent{Event: kvblock.KVCacheEvent{Data: kvblock.Removed(7)}}},
		{RouterEvent: kvblock.RouterEvent{Event: kvblock.KVCacheEvent{Data: kvblock.Cleared()}}},
	}
	b, err := encodeBatch(EncodingMap, 1700000000.5, events, 4, 3)
	if err != nil {
		t.Fatal(err)
	}
	batch := decodePayload(t, b)
	if batch[0] != 1700000000.5 || batch[2] != uint64(3) {
		t.Errorf("ts %v, dp rank %#v", batch[0], batch[2])
	}
	want := []any{
		kv{keys: []string{"type", "block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium", "lora_name"},
			vals: map[string]any{"type": "BlockStored", "block_hashes": hashes(7, 1<<64-1), "parent_block_hash": parent,
				"token_ids": uints([]uint32{1, 2, 3, 4, 70000, 6, 7, 8}), "block_size": uint64(4), "lora_id": nil, "medium": "GPU", "lora_name": nil}},
		kv{keys: []string{"type", "block_hashes", "medium"}, vals: map[string]any{"type": "BlockRemoved", "block_hashes": hashes(7), "medium": "GPU"}},
		kv{keys: []string{"type"}, vals: map[string]any{"type": "AllBlocksCleared"}},
	}
	if diff := cmp.Diff(want, batch[1], cmp.AllowUnexported(kv{})); diff != "" {
		t.Errorf("map events (-want +got):\n%s", diff)
	}

	b, err = encodeBatch(EncodingArray, 1, events, 4, 0)
	if err != nil {
		t.Fatal(err)
	}
	batch = decodePayload(t, b)
	want = []any{
		[]any{"BlockStored", hashes(7, 1<<64-1), parent, uints([]uint32{1, 2, 3, 4, 70000, 6, 7, 8}), uint64(4), nil, "GPU", nil},
		[]any{"BlockRemoved", hashes(7), "GPU"},
		[]any{"AllBlocksCleared"},
	}
	if diff := cmp.Diff(want, batch[1]); diff != "" {
		t.Errorf("array events (-want +got):\n%s", diff)
	}
	// The first event's first bytes: fixarray(3), float64 ts.
	if b[0] != 0x93 || b[1] != 0xcb {
		t.Errorf("batch header % x", b[:2])
	}
}

// recvTimeout receives one message from s or fails after d.
func recvTimeout(t *testing.T, s zmq4.Socket, d time.Duration) zmq4.Msg {
	t.Helper()
	type res struct {
		msg zmq4.Msg
		err error
	}
	ch := make(chan res, 1)
	go func() {
		m, err := s.Recv()
		ch <- res{m, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.msg
	case <-time.After(d):
		t.Fatal("no message")
	}
	return zmq4.Msg{}
}

func TestKVEventsOverZeroMQ(t *testing.T) {
	s := testServer(t, func(_ *mocker.Config, c *Config) {
		c.KVEvents = KVEventsConfig{Port: 0, ReplayPort: 0, Topic: "kv@test"}
	})
	if s.KVEventsAddr() == "" || s.ReplayAddr() == "" {
		t.Fatalf("addresses %q %q", s.KVEventsAddr(), s.ReplayAddr())
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	sub := zmq4.NewSub(ctx)
	defer sub.Close()
	if err := sub.Dial("tcp://" + s.KVEventsAddr()); err != nil {
		t.Fatal(err)
	}
	if err := sub.SetOption(zmq4.OptionSubscribe, ""); err != nil {
		t.Fatal(err)
	}
	// Nothing is published before the first request, and nothing is
	// sent to a subscriber before its subscription reaches the publisher.
	waitSubscribed(t, s)

	// Two requests with different 9-token prompts: each stores its two
	// full prompt blocks (the partial third block is not an event; one
	// generated token does not fill it).
	var payloads [][]byte
	for r, base := range []uint32{100, 500} {
		p := make([]uint32, 9)
		for i := range p {
			p[i] = base + uint32(i)
		}
		if resp, body := post(t, s, "/v1/completions", map[string]any{"prompt": p, "max_tokens": 1}); resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
		msg := recvTimeout(t, sub, 5*time.Second)
		if len(msg.Frames) != 3 || string(msg.Frames[0]) != "kv@test" || len(msg.Frames[1]) != 8 {
			t.Fatalf("frames %q", msg.Frames)
		}
		if seq := binary.BigEndian.Uint64(msg.Frames[1]); seq != uint64(r) {
			t.Errorf("request %d: seq %d", r, seq)
		}
		batch := decodePayload(t, msg.Frames[2])
		seq := kvblock.SeqHashes(kvblock.LocalHashes(p, 4))
		want := []any{kv{keys: []string{"type", "block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium", "lora_name"},
			vals: map[string]any{"type": "BlockStored", "block_hashes": hashes(seq[0], seq[1]), "parent_block_hash": nil,
				"token_ids": uints(p[:8]), "block_size": uint64(4), "lora_id": nil, "medium": "GPU", "lora_name": nil}}}
		if diff := cmp.Diff(want, batch[1], cmp.AllowUnexported(kv{})); diff != "" {
			t.Errorf("request %d events (-want +got):\n%s", r, diff)
		}
		if batch[2] != uint64(0) {
			t.Errorf("data_parallel_rank %#v", batch[2])
		}
		payloads = append(payloads, msg.Frames[2])
	}

	// Replay from 0: both batches, byte for byte, then the end marker.
	dealer := zmq4.NewDealer(ctx, zmq4.WithID(zmq4.SocketIdentity("replayer")))
	defer dealer.Close()
	if err := dealer.Dial("tcp://" + s.ReplayAddr()); err != nil {
		t.Fatal(err)
	}
	for _, from := range []uint64{0, 1} {
		if err := dealer.SendMulti(zmq4.NewMsgFrom(nil, binary.BigEndian.AppendUint64(nil, from))); err != nil {
			t.Fatal(err)
		}
		for seq := from; ; seq++ {
			msg := recvTimeout(t, dealer, 5*time.Second)
			if len(msg.Frames) != 3 || len(msg.Frames[0]) != 0 {
				t.Fatalf("replay frames %q", msg.Frames)
			}
			if bytes.Equal(msg.Frames[1], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}) {
				if len(msg.Frames[2]) != 0 || seq != 2 {
					t.Errorf("end marker after seq %d with payload %q", seq, msg.Frames[2])
				}
				break
			}
			if got := binary.BigEndian.Uint64(msg.Frames[1]); got != seq || seq > 1 || !bytes.Equal(msg.Frames[2], payloads[seq]) {
				t.Fatalf("replay from %d: seq %d (want %d), same payload %v", from, got, seq, seq <= 1 && bytes.Equal(msg.Frames[2], payloads[seq]))
			}
		}
	}
}

func TestReplayBufferIsBounded(t *testing.T) {
	p := newRankPublisher(KVEventsConfig{BufferSteps: 3}, 4, nil)
	for i := range 5 {
		if seq := p.keep([]byte{byte(i)}); seq != uint64(i) {
			t.Errorf("batch %d numbered %d", i, seq)
		}
	}
	var got []string
	for _, b := range p.buffered(0) {
		got = append(got, fmt.Sprint(b.seq, b.payload))
	}
	if diff := cmp.Diff([]string{"2 [2]", "3 [3]", "4 [4]"}, got); diff != "" {
		t.Errorf("buffer (-want +got):\n%s", diff)
	}
	if b := p.buffered(4); len(b) != 1 || b[0].seq != 4 {
		t.Errorf("from 4: %v", b)
	}
}

// With two data-parallel ranks each rank publishes on its own socket,
// rank 1's on rank 0's port + 1 (replay likewise), with its own
// sequence numbers and its rank in the batch; a request's
// X-data-parallel-rank header picks the rank that serves it.
func TestKVEventsPerRank(t *testing.T) {
	s := testServer(t, func(mc *mocker.Config, c *Config) {
		mc.DPSize = 2
		c.KVEvents = KVEventsConfig{Port: 0, ReplayPort: 0}
	})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	rankAddr := func(base string, rank int) string {
		host, port, err := net.SplitHostPort(base)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := strconv.Atoi(port)
		return "tcp://" + net.JoinHostPort(host, strconv.Itoa(p+rank))
	}
	subs := make([]zmq4.Socket, 2)
	for r := range subs {
		subs[r] = zmq4.NewSub(ctx)
		defer subs[r].Close()
		if err := subs[r].Dial(rankAddr(s.KVEventsAddr(), r)); err != nil {
			t.Fatalf("rank %d's publisher: %v", r, err)
		}
		if err := subs[r].SetOption(zmq4.OptionSubscribe, ""); err != nil {
			t.Fatal(err)
		}
	}
	waitSubscribed(t, s)
	for _, rank := range []int{1, 0} {
		p := make([]uint32, 8)
		for i := range p {
			p[i] = uint32(100*rank + i + 10)
		}
		b, _ := json.Marshal(map[string]any{"prompt": p, "max_tokens": 1})
		req, _ := http.NewRequest(http.MethodPost, s.url("/v1/completions"), bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-data-parallel-rank", strconv.Itoa(rank))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("rank %d: status %d", rank, resp.StatusCode)
		}
		msg := recvTimeout(t, subs[rank], 5*time.Second)
		if seq := binary.BigEndian.Uint64(msg.Frames[1]); seq != 0 {
			t.Errorf("rank %d's first batch has seq %d, want 0 (its own numbering)", rank, seq)
		}
		if batch := decodePayload(t, msg.Frames[2]); batch[2] != uint64(rank) {
			t.Errorf("rank %d's batch says data_parallel_rank %#v", rank, batch[2])
		}
	}
	// Rank 1's replay socket is on the replay port + 1 and holds its batch.
	dealer := zmq4.NewDealer(ctx, zmq4.WithID(zmq4.SocketIdentity("replayer-1")))
	defer dealer.Close()
	if err := dealer.Dial(rankAddr(s.ReplayAddr(), 1)); err != nil {
		t.Fatal(err)
	}
	if err := dealer.SendMulti(zmq4.NewMsgFrom(nil, binary.BigEndian.AppendUint64(nil, 0))); err != nil {
		t.Fatal(err)
	}
	if msg := recvTimeout(t, dealer, 5*time.Second); len(msg.Frames) != 3 || decodePayload(t, msg.Frames[2])[2] != uint64(1) {
		t.Errorf("rank 1's replay: %q", msg.Frames)
	}
	// A rank the engine does not have is the client's error.
	req, _ := http.NewRequest(http.MethodPost, s.url("/v1/completions"), strings.NewReader(`{"prompt":[1,2],"max_tokens":1}`))
	req.Header.Set("X-data-parallel-rank", "2")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("rank 2 of 2: status %d, want 400", resp.StatusCode)
	}
}

// A block stored for a LoRA adapter's request names the adapter, as
// vLLM's do, so that a subscriber salts its hashes with it.
func TestEncodeNamesTheAdapter(t *testing.T) {
	events := []mocker.KVEvent{{RouterEvent: kvblock.RouterEvent{Event: kvblock.KVCacheEvent{Data: kvblock.Stored(nil,
		kvblock.StoredBlock{BlockHash: 7})}}, Tokens: []uint32{1, 2, 3, 4}, LoraName: "sql-expert"}}
	b, err := encodeBatch(EncodingArray, 1, events, 4, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{[]any{"BlockStored", hashes(7), nil, uints([]uint32{1, 2, 3, 4}), uint64(4), nil, "GPU", "sql-expert"}}
	if diff := cmp.Diff(want, decodePayload(t, b)[1]); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
