package kvevents

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/dynamo-go/dynamo/pkg/kvblock"
)

// Timing of connections. Variables so that tests may shorten them.
var (
	dialRetry   = 100 * time.Millisecond // between dial attempts
	minBackoff  = 50 * time.Millisecond  // before the first reconnect
	maxBackoff  = 2 * time.Second        // between reconnects at most
	warnEvery   = 10 * time.Second       // one warning per kind of trouble per interval
	defaultWait = 5 * time.Second        // default ReplayTimeout
)

// Config configures a Subscriber.
type Config struct {
	// Endpoint is the engine's PUB endpoint to connect to, e.g.
	// tcp://127.0.0.1:5557.
	Endpoint string
	// ReplayEndpoint is the engine's ROUTER endpoint for replays; "" means
	// no replay: gaps are logged and counted.
	ReplayEndpoint string
	// Topic is the subscription prefix; "" subscribes to every topic.
	Topic string
	// BlockSize is the engine's tokens per block (required). A
	// BlockStored event whose block_size differs, or whose token_ids are
	// not block_size tokens per block hash, is logged, skipped and counted.
	BlockSize int
	// DefaultDPRank is the data-parallel rank of batches that carry none.
	// vLLM stamps every batch; SGLang does not, and publishes rank r on
	// the endpoint's port + r, so one Subscriber per rank sets it.
	DefaultDPRank int
	// ReplayTimeout bounds one replay request, from dialling the replay
	// endpoint to its end marker (0: 5 s).
	ReplayTimeout time.Duration
	// Logger receives the subscriber's logs (nil: discarded).
	Logger *slog.Logger
	// Metrics records what the subscriber does (optional).
	Metrics *Metrics
}

// Subscriber follows one engine's ZeroMQ KV event stream and turns its
// batches into kvblock events. See the package documentation.
type Subscriber struct {
	cfg Config
	log *slog.Logger
}

// New checks cfg and returns a Subscriber. It opens nothing: Run does.
func New(cfg Config) (*Subscriber, error) {
	if cfg.Endpoint == "" {
		return nil, errors.New("kvevents: Endpoint is required")
	}
	if cfg.BlockSize <= 0 {
		return nil, fmt.Errorf("kvevents: BlockSize must be positive, got %d", cfg.BlockSize)
	}
	if cfg.DefaultDPRank < 0 || cfg.DefaultDPRank > math.MaxUint32 {
		return nil, fmt.Errorf("kvevents: DefaultDPRank %d out of range", cfg.DefaultDPRank)
	}
	if cfg.ReplayTimeout <= 0 {
		cfg.ReplayTimeout = defaultWait
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("endpoint", cfg.Endpoint)
	return &Subscriber{cfg: cfg, log: log}, nil
}

// Run connects, subscribes and calls emit for every converted event in
// order, with its own EventID numbering per dp rank (0, 1, 2, ... with no
// gaps), until ctx ends; then it returns nil. It reconnects when the
// publisher goes away. emit is called from Run's goroutine, one event at
// a time. Each call of Run starts a new numbering.
func (s *Subscriber) Run(ctx context.Context, emit func(rank int, ev kvblock.KVCacheEvent)) error {
	st := &stream{s: s, emit: emit, next: map[uint32]uint64{}, warned: map[string]time.Time{}}
	backoff := minBackoff
	for {
		got, err := st.session(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if got {
			backoff = minBackoff
		}
		s.log.Warn("kvevents: lost the engine's event publisher; reconnecting", "err", err, "in", backoff)
		s.cfg.Metrics.reconnect()
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// stream is the state of one Run: where the publisher's sequence stands
// and our event ids.
type stream struct {
	s    *Subscriber
	emit func(rank int, ev kvblock.KVCacheEvent)

	started  bool              // a batch was seen
	lastLive uint64            // the last sequence number read from the PUB socket
	expected uint64            // the next sequence number to apply
	next     map[uint32]uint64 // our next event id per dp rank (a rank is known once present)

	warned map[string]time.Time // last warning per kind
}

// session dials the publisher and reads it until the connection breaks
// (or ctx ends). got reports whether any message arrived.
func (st *stream) session(ctx context.Context) (got bool, err error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sub := zmq4.NewSub(sctx, zmq4.WithLogger(st.zmqLogger()),
		zmq4.WithDialerRetry(dialRetry), zmq4.WithDialerMaxRetries(-1))
	defer sub.Close()
	if err := sub.SetOption(zmq4.OptionSubscribe, st.s.cfg.Topic); err != nil {
		return false, err
	}
	if err := sub.Dial(st.s.cfg.Endpoint); err != nil {
		return false, err
	}
	st.s.log.Debug("kvevents: connected to the engine's event publisher")
	for {
		msg, err := sub.Recv()
		if err != nil {
			return got, err
		}
		got = true
		st.message(ctx, msg.Frames)
	}
}

// message handles one message of the PUB socket.
func (st *stream) message(ctx context.Context, frames [][]byte) {
	if len(frames) != 3 || len(frames[1]) != 8 {
		st.skip(reasonFrames, "kvevents: message skipped: want [topic, 8-byte sequence, payload]",
			"frames", len(frames))
		return
	}
	seq := binary.BigEndian.Uint64(frames[1])
	replay := st.s.cfg.ReplayEndpoint != ""
	switch {
	case !st.started:
		st.started = true
		st.expected = seq
		if seq > 0 && replay {
			// Joining a running engine: fetch what its buffer still holds.
			st.expected = 0
			st.fill(ctx, seq, true)
		}
	case seq <= st.lastLive:
		// A PUB socket never goes back: the engine restarted, and with it
		// its cache.
		st.s.log.Warn("kvevents: the engine's sequence went back: publisher restarted; clearing every dp rank",
			"seq", seq, "last", st.lastLive)
		st.s.cfg.Metrics.restart()
		for _, r := range slices.Sorted(maps.Keys(st.next)) {
			st.send(r, kvblock.Cleared())
		}
		st.expected = 0
		if seq > 0 {
			st.fill(ctx, seq, false)
		}
	case seq > st.expected:
		st.fill(ctx, seq, false)
	}
	st.lastLive = seq
	if seq < st.expected {
		st.s.cfg.Metrics.skip(reasonDuplicate)
		return
	}
	st.apply(seq, frames[2])
}

// fill recovers the batches [st.expected, seq) before the live batch seq
// through the replay socket, or gives them up. initial marks the history
// from before the subscription, which is fetched but is not a gap.
func (st *stream) fill(ctx context.Context, seq uint64, initial bool) {
	from := st.expected
	if st.s.cfg.ReplayEndpoint == "" {
		st.gap(initial, gapUnrecovered, from, seq, errors.New("no replay endpoint"))
		st.expected = seq
		return
	}
	batches, err := st.replay(ctx, from)
	complete := err == nil
	for _, b := range batches {
		if b.seq < st.expected {
			st.s.cfg.Metrics.skip(reasonDuplicate)
			continue
		}
		if b.seq > st.expected && st.expected < seq {
			complete = false // the engine's buffer no longer holds some
		}
		st.apply(b.seq, b.payload)
	}
	if st.expected < seq {
		complete = false
		st.expected = seq
	}
	if complete {
		st.gap(initial, gapReplayed, from, seq, nil)
		return
	}
	if err == nil {
		err = errors.New("the engine's replay buffer no longer holds them")
	}
	st.gap(initial, gapUnrecovered, from, seq, err)
}

// gap logs and counts the outcome of a gap [from, to).
func (st *stream) gap(initial bool, outcome string, from, to uint64, err error) {
	if initial {
		st.s.log.Debug("kvevents: joined the engine's stream", "seq", to, "history_complete", outcome == gapReplayed)
		return
	}
	st.s.cfg.Metrics.gap(outcome)
	if outcome == gapReplayed {
		st.s.log.Info("kvevents: filled a gap from the engine's replay buffer", "from", from, "to", to-1)
		return
	}
	st.warn("gap", "kvevents: lost KV event batches; the router's view of this worker may lag until they age out",
		"from", from, "to", to-1, "err", err)
}

// replayed is one batch from the replay socket.
type replayed struct {
	seq     uint64
	payload []byte
}

// replay asks the engine's ROUTER socket for the batches from seq on: the
// request is [empty, seq as 8 bytes big endian] from a DEALER (the ROUTER
// sees [identity, empty, seq]); each answer is [empty, seq, payload] and
// the last one has seq -1 and an empty payload. A request that gets no
// complete answer in time (a ROUTER may drop what a peer sends before the
// connection's handshake settled) is sent again on a new connection, with
// a longer wait each time, within ReplayTimeout: replays are idempotent.
func (st *stream) replay(ctx context.Context, from uint64) ([]replayed, error) {
	rctx, cancel := context.WithTimeout(ctx, st.s.cfg.ReplayTimeout)
	defer cancel()
	wait := replayAttempt
	for {
		out, err := st.replayOnce(rctx, from, wait)
		if err == nil || rctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
			return out, err
		}
		st.s.log.Debug("kvevents: replay unanswered; asking again", "from", from, "waited", wait)
		wait *= 2
	}
}

// replayAttempt is how long the first replay request waits for its
// complete answer.
const replayAttempt = 500 * time.Millisecond

// replayOnce makes one replay request on a new connection and waits at
// most wait for the whole answer.
func (st *stream) replayOnce(ctx context.Context, from uint64, wait time.Duration) ([]replayed, error) {
	actx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	d := zmq4.NewDealer(actx, zmq4.WithLogger(st.zmqLogger()),
		zmq4.WithDialerRetry(dialRetry), zmq4.WithDialerMaxRetries(-1))
	defer d.Close()
	if err := d.Dial(st.s.cfg.ReplayEndpoint); err != nil {
		return nil, fmt.Errorf("kvevents: replay: %w", err)
	}
	var req [8]byte
	binary.BigEndian.PutUint64(req[:], from)
	if err := d.Send(zmq4.NewMsgFrom([]byte{}, req[:])); err != nil {
		return nil, fmt.Errorf("kvevents: replay request: %w", err)
	}
	var out []replayed
	for {
		msg, err := d.Recv()
		if err != nil {
			if actx.Err() != nil {
				err = actx.Err()
			}
			return out, fmt.Errorf("kvevents: replay: %w", err)
		}
		f := msg.Frames
		if len(f) == 3 && len(f[0]) == 0 {
			f = f[1:]
		}
		if len(f) != 2 || len(f[0]) != 8 {
			st.skip(reasonFrames, "kvevents: replay message skipped: want [empty, 8-byte sequence, payload]",
				"frames", len(msg.Frames))
			continue
		}
		seq := binary.BigEndian.Uint64(f[0])
		if seq == endSeq {
			return out, nil
		}
		out = append(out, replayed{seq: seq, payload: f[1]})
	}
}

// apply converts and emits the batch seq.
func (st *stream) apply(seq uint64, payload []byte) {
	st.expected = seq + 1
	b, err := decodeBatch(payload)
	if err != nil {
		st.skip(reasonDecode, "kvevents: undecodable batch skipped", "seq", seq, "err", err)
		return
	}
	for _, e := range b.badEvents {
		st.skip(reasonEvent, "kvevents: unreadable event skipped", "seq", seq, "err", e)
	}
	rank := uint32(st.s.cfg.DefaultDPRank)
	if b.dpRank != nil {
		if *b.dpRank < 0 || *b.dpRank > math.MaxUint32 {
			st.skip(reasonDecode, "kvevents: batch with an invalid data_parallel_rank skipped", "seq", seq, "rank", *b.dpRank)
			return
		}
		rank = uint32(*b.dpRank)
	}
	if _, ok := st.next[rank]; !ok {
		st.next[rank] = 0
	}
	for _, ev := range b.events {
		st.convert(seq, rank, ev)
	}
}

// convert emits one engine event as ours.
func (st *stream) convert(seq uint64, rank uint32, ev wireEvent) {
	switch ev.tag {
	case tagStored:
		if !onDevice(ev.medium) {
			st.s.cfg.Metrics.skip(reasonMedium)
			return
		}
		if len(ev.hashes) == 0 {
			return
		}
		bs := st.s.cfg.BlockSize
		if ev.blockSize != int64(bs) || len(ev.tokens) != len(ev.hashes)*bs {
			st.skip(reasonBlockSize, "kvevents: BlockStored skipped: its tokens do not cut into blocks of the configured size",
				"seq", seq, "block_size", bs, "event_block_size", ev.blockSize, "blocks", len(ev.hashes), "tokens", len(ev.tokens))
			return
		}
		seed := kvblock.Seed
		if ev.loraName != "" {
			seed = kvblock.SaltedSeed(ev.loraName, "")
		}
		blocks := make([]kvblock.StoredBlock, len(ev.hashes))
		for i, h := range ev.hashes {
			blocks[i] = kvblock.StoredBlock{BlockHash: h, TokensHash: kvblock.LocalBlockHashSeed(ev.tokens[i*bs:(i+1)*bs], seed)}
		}
		st.send(rank, kvblock.Stored(ev.parent, blocks...))
	case tagRemoved:
		if !onDevice(ev.medium) {
			st.s.cfg.Metrics.skip(reasonMedium)
			return
		}
		if len(ev.hashes) == 0 {
			return
		}
		st.send(rank, kvblock.Removed(ev.hashes...))
	case tagCleared:
		st.send(rank, kvblock.Cleared())
	}
}

// send numbers and emits one event of rank.
func (st *stream) send(rank uint32, data kvblock.EventData) {
	id := st.next[rank]
	st.next[rank] = id + 1
	st.s.cfg.Metrics.event(data.Kind())
	st.emit(int(rank), kvblock.KVCacheEvent{EventID: id, Data: data, DPRank: rank})
}

// skip counts a skipped message or event and warns (rate limited).
func (st *stream) skip(reason, msg string, args ...any) {
	st.s.cfg.Metrics.skip(reason)
	st.warn(reason, msg, args...)
}

// warn logs at most one warning of a kind per warnEvery; the others go
// to debug.
func (st *stream) warn(kind, msg string, args ...any) {
	now := time.Now()
	if last, ok := st.warned[kind]; ok && now.Sub(last) < warnEvery {
		st.s.log.Debug(msg, args...)
		return
	}
	st.warned[kind] = now
	st.s.log.Warn(msg, args...)
}

// zmqLogger routes zmq4's own log lines to the subscriber's logger.
func (st *stream) zmqLogger() *log.Logger {
	return slog.NewLogLogger(st.s.log.Handler(), slog.LevelDebug)
}
