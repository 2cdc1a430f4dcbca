package vllmapi

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/dynamo-go/dynamo/pkg/mocker"
)

// Event encodings (KVEventsConfig.Encoding).
const (
	// EncodingMap is current vLLM's: each event is a msgpack map whose
	// first key is "type" (the class name), then the struct's fields in
	// declaration order, fields with a default omitted when they hold it.
	EncodingMap = "map"
	// EncodingArray is vLLM's legacy array_like layout: each event is an
	// array whose first element is the class name, then every field in
	// declaration order.
	EncodingArray = "array"
)

// Defaults of KVEventsConfig (vLLM's ZmqEventPublisher defaults).
const (
	DefaultBufferSteps = 10_000
	defaultQueueSize   = 10_000
)

// EndSeq is the sequence number of the replay end marker: -1 as a signed
// 8-byte big-endian integer (eight 0xff bytes).
const EndSeq = -1

// mediumGPU is the medium of every event: the mocker's cache is all "GPU".
const mediumGPU = "GPU"

// KVEventsConfig configures the ZeroMQ KV event publisher.
type KVEventsConfig struct {
	// Port is the PUB socket's port: < 0 publishes nothing, 0 picks a
	// free port.
	Port int
	// ReplayPort is the ROUTER socket's port for replay requests: < 0
	// offers no replay, 0 picks a free port. It needs Port >= 0.
	ReplayPort int
	// Topic is the first frame of every published message (vLLM's
	// default: "", an empty frame).
	Topic string
	// BufferSteps is the number of recent batches kept for replay.
	// Zero: DefaultBufferSteps.
	BufferSteps int
	// Encoding is EncodingMap (zero value) or EncodingArray.
	Encoding string
}

func (c KVEventsConfig) enabled() bool { return c.Port >= 0 }

func (c KVEventsConfig) validate() error {
	var errs []error
	if c.Port > 65535 || c.ReplayPort > 65535 {
		errs = append(errs, fmt.Errorf("%w: kv events ports must be at most 65535", ErrInvalidConfig))
	}
	if c.ReplayPort >= 0 && c.Port < 0 {
		errs = append(errs, fmt.Errorf("%w: a kv events replay port needs a kv events port", ErrInvalidConfig))
	}
	if c.BufferSteps < 0 {
		errs = append(errs, fmt.Errorf("%w: kv events buffer steps must not be negative, got %d", ErrInvalidConfig, c.BufferSteps))
	}
	switch c.Encoding {
	case "", EncodingMap, EncodingArray:
	default:
		errs = append(errs, fmt.Errorf("%w: kv events encoding %q: want %s or %s", ErrInvalidConfig, c.Encoding, EncodingMap, EncodingArray))
	}
	return errors.Join(errs...)
}

// published is one batch as sent: its sequence number and payload.
type published struct {
	seq     uint64
	payload []byte
}

// rankPublisher is one data-parallel rank's publisher, as vLLM runs one
// per rank: it turns each scheduler pass's KV events into a
// KVEventBatch, and sends it on its PUB socket from its own goroutine
// (publishLoop), keeping the last BufferSteps batches for replay over its
// ROUTER socket (replayLoop).
type rankPublisher struct {
	cfg       KVEventsConfig
	blockSize int
	log       *slog.Logger
	now       func() time.Time

	pub, router zmq4.Socket
	queue       chan []byte
	dropped     atomic.Uint64

	mu    sync.Mutex
	ring  []published // a ring of at most cfg.BufferSteps batches
	start int         // index of the oldest batch in ring
	next  uint64      // sequence number of the next batch
}

func newRankPublisher(cfg KVEventsConfig, blockSize int, log *slog.Logger) *rankPublisher {
	if cfg.BufferSteps == 0 {
		cfg.BufferSteps = DefaultBufferSteps
	}
	if cfg.Encoding == "" {
		cfg.Encoding = EncodingMap
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &rankPublisher{cfg: cfg, blockSize: blockSize, log: log, now: time.Now, queue: make(chan []byte, defaultQueueSize)}
}

// listen binds the PUB socket on host:pubPort (and the ROUTER socket on
// host:replayPort unless it is negative). The sockets live until ctx
// ends or close is called.
func (p *rankPublisher) listen(ctx context.Context, host string, pubPort, replayPort int) error {
	zlog := slog.NewLogLogger(p.log.Handler(), slog.LevelDebug)
	p.pub = zmq4.NewPub(ctx, zmq4.WithLogger(zlog))
	if err := p.pub.Listen(endpoint(host, pubPort)); err != nil {
		p.pub.Close()
		return fmt.Errorf("vllmapi: kv events: %w", err)
	}
	if replayPort >= 0 {
		p.router = zmq4.NewRouter(ctx, zmq4.WithLogger(zlog))
		if err := p.router.Listen(endpoint(host, replayPort)); err != nil {
			p.router.Close()
			p.pub.Close()
			p.router = nil
			return fmt.Errorf("vllmapi: kv events replay: %w", err)
		}
	}
	return nil
}

func endpoint(host string, port int) string {
	return "tcp://" + net.JoinHostPort(host, strconv.Itoa(port))
}

// addr returns a socket's bound address, "" without one.
func addr(s zmq4.Socket) string {
	if s == nil || s.Addr() == nil {
		return ""
	}
	return s.Addr().String()
}

// close closes the sockets (ending replayLoop).
func (p *rankPublisher) close() {
	if p.router != nil {
		p.router.Close()
	}
	if p.pub != nil {
		p.pub.Close()
	}
}

// publishBatch encodes one pass's events as a KVEventBatch and queues
// it for the PUB socket. When the queue is full the batch is dropped
// (and counted): the engine's scheduler never waits for subscribers.
func (p *rankPublisher) publishBatch(_ context.Context, dpRank int, events []mocker.KVEvent) error {
	payload, err := encodeBatch(p.cfg.Encoding, float64(p.now().UnixNano())/1e9, events, p.blockSize, dpRank)
	if err != nil {
		return err
	}
	select {
	case p.queue <- payload:
		return nil
	default:
		if n := p.dropped.Add(1); n == 1 || n%1000 == 0 {
			p.log.Warn("vllmapi: kv events queue full; batches dropped", "dropped", n)
		}
		return fmt.Errorf("vllmapi: kv events queue full")
	}
}

// publishLoop sends queued batches, numbering them from 0, until ctx
// ends; then it sends what is still queued and returns.
func (p *rankPublisher) publishLoop(ctx context.Context) {
	for {
		select {
		case payload := <-p.queue:
			p.send(payload)
		case <-ctx.Done():
			for {
				select {
				case payload := <-p.queue:
					p.send(payload)
				default:
					return
				}
			}
		}
	}
}

// send publishes [topic, seq, payload] and keeps the batch for replay.
func (p *rankPublisher) send(payload []byte) {
	seq := p.keep(payload)
	msg := zmq4.NewMsgFrom([]byte(p.cfg.Topic), seqBytes(int64(seq)), payload)
	if err := p.pub.SendMulti(msg); err != nil {
		p.log.Debug("vllmapi: kv events send", "seq", seq, "err", err)
	}
}

// keep numbers a batch and keeps it for replay, dropping the oldest
// batch when BufferSteps are kept.
func (p *rankPublisher) keep(payload []byte) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	seq := p.next
	p.next++
	if len(p.ring) < p.cfg.BufferSteps {
		p.ring = append(p.ring, published{seq, payload})
	} else {
		p.ring[p.start] = published{seq, payload}
		p.start = (p.start + 1) % len(p.ring)
	}
	return seq
}

// buffered returns the kept batches with a sequence number >= from, in
// order.
func (p *rankPublisher) buffered(from uint64) []published {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []published
	for i := range p.ring {
		b := p.ring[(p.start+i)%len(p.ring)]
		if b.seq >= from {
			out = append(out, b)
		}
	}
	return out
}

// replayLoop answers replay requests until the ROUTER socket is closed.
// A request is a DEALER's [empty, start seq (8 bytes big-endian)]; the
// ROUTER sees [identity, empty, start seq]. The answer is one message
// [empty, seq, payload] per kept batch from start seq on, then the end
// marker [empty, EndSeq, empty].
func (p *rankPublisher) replayLoop() {
	for {
		msg, err := p.router.Recv()
		if err != nil {
			return
		}
		if len(msg.Frames) != 3 || len(msg.Frames[2]) != 8 {
			p.log.Warn("vllmapi: invalid kv events replay request", "frames", len(msg.Frames))
			continue
		}
		id := msg.Frames[0]
		start := binary.BigEndian.Uint64(msg.Frames[2])
		batches := p.buffered(start)
		p.log.Debug("vllmapi: kv events replay", "from", start, "batches", len(batches))
		for _, b := range batches {
			if err := p.router.SendMulti(zmq4.NewMsgFrom(id, nil, seqBytes(int64(b.seq)), b.payload)); err != nil {
				p.log.Debug("vllmapi: kv events replay send", "err", err)
				break
			}
		}
		if err := p.router.SendMulti(zmq4.NewMsgFrom(id, nil, seqBytes(EndSeq), nil)); err != nil {
			p.log.Debug("vllmapi: kv events replay end", "err", err)
		}
	}
}

// seqBytes is a sequence number as 8 bytes, big-endian (two's complement
// for EndSeq).
func seqBytes(seq int64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(seq))
}

// encodeBatch writes a KVEventBatch the way vLLM's msgspec encoder does:
// the batch is array_like, [ts, events, data_parallel_rank]; each event is
// tagged with its class name, as a map ("type" first) or, for
// EncodingArray, as an array (the name first). Integers take their
// smallest msgpack form, ts is a float64, block hashes are unsigned
// integers (vLLM's default integer form of block hashes).
//
//	BlockStored:      block_hashes, parent_block_hash, token_ids, block_size, lora_id (nil), medium ("GPU"), lora_name (the adapter's, or nil)
//	BlockRemoved:     block_hashes, medium ("GPU")
//	AllBlocksCleared: (no fields)
func encodeBatch(encoding string, ts float64, events []mocker.KVEvent, blockSize, dpRank int) ([]byte, error) {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	w := &writer{enc: enc}
	w.arrayLen(3)
	w.do(enc.EncodeFloat64(ts))
	w.arrayLen(len(events))
	for _, ev := range events {
		w.event(encoding, ev, blockSize)
	}
	w.do(enc.EncodeInt(int64(dpRank)))
	if w.err != nil {
		return nil, fmt.Errorf("vllmapi: encode kv event batch: %w", w.err)
	}
	return buf.Bytes(), nil
}

// writer keeps the first error of a run of encoder calls.
type writer struct {
	enc *msgpack.Encoder
	err error
}

func (w *writer) do(err error) {
	if w.err == nil {
		w.err = err
	}
}

func (w *writer) arrayLen(n int) { w.do(w.enc.EncodeArrayLen(n)) }

// field is one struct field: its name and a function writing its value.
type field struct {
	name  string
	write func()
}

// event writes one tagged event.
func (w *writer) event(encoding string, ev mocker.KVEvent, blockSize int) {
	d := ev.Event.Data
	var tag string
	var fields []field
	switch {
	case d.Stored != nil:
		tag = "BlockStored"
		hashes := make([]uint64, len(d.Stored.Blocks))
		for i, b := range d.Stored.Blocks {
			hashes[i] = b.BlockHash
		}
		fields = []field{
			{"block_hashes", func() { w.uints(hashes) }},
			{"parent_block_hash", func() {
				if d.Stored.ParentHash == nil {
					w.do(w.enc.EncodeNil())
				} else {
					w.do(w.enc.EncodeUint(*d.Stored.ParentHash))
				}
			}},
			{"token_ids", func() {
				w.arrayLen(len(ev.Tokens))
				for _, t := range ev.Tokens {
					w.do(w.enc.EncodeUint(uint64(t)))
				}
			}},
			{"block_size", func() { w.do(w.enc.EncodeInt(int64(blockSize))) }},
			{"lora_id", func() { w.do(w.enc.EncodeNil()) }},
			{"medium", func() { w.do(w.enc.EncodeString(mediumGPU)) }},
			{"lora_name", func() {
				if ev.LoraName == "" {
					w.do(w.enc.EncodeNil())
				} else {
					w.do(w.enc.EncodeString(ev.LoraName))
				}
			}},
		}
	case d.Removed != nil:
		tag = "BlockRemoved"
		fields = []field{
			{"block_hashes", func() { w.uints(d.Removed.BlockHashes) }},
			{"medium", func() { w.do(w.enc.EncodeString(mediumGPU)) }},
		}
	case d.Cleared:
		tag = "AllBlocksCleared"
	default:
		w.do(fmt.Errorf("event %d has no data", ev.Event.EventID))
		return
	}
	if encoding == EncodingArray {
		w.arrayLen(1 + len(fields))
		w.do(w.enc.EncodeString(tag))
		for _, f := range fields {
			f.write()
		}
		return
	}
	w.do(w.enc.EncodeMapLen(1 + len(fields)))
	w.do(w.enc.EncodeString("type"))
	w.do(w.enc.EncodeString(tag))
	for _, f := range fields {
		w.do(w.enc.EncodeString(f.name))
		f.write()
	}
}

func (w *writer) uints(v []uint64) {
	w.arrayLen(len(v))
	for _, h := range v {
		w.do(w.enc.EncodeUint(h))
	}
}
