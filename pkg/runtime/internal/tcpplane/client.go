package tcpplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"
)

// Defaults for the zero values of ClientConfig.
const (
	DefaultPoolSize       = 4
	DefaultConnectTimeout = 5 * time.Second
	DefaultAckTimeout     = 5 * time.Second
	DefaultQueueSize      = 1024
	// DeadTimeoutFactor times AckTimeout is the default DeadTimeout: the
	// silence after which a caller takes a peer's process for stopped
	// (docs/protocol.md §7.8.3 gives a caller as long).
	DeadTimeoutFactor = 6
)

// ClientConfig configures a Client.
type ClientConfig struct {
	// PoolSize is the maximum number of connections per address. A new
	// connection is dialed only when every existing one has a request
	// waiting for its ack. 0 means DefaultPoolSize (4); the reference
	// DYN_TCP_POOL_SIZE default is 100.
	PoolSize int
	// ConnectTimeout bounds getting a connection (waiting for a dial in
	// progress included). 0 means DefaultConnectTimeout (5 s).
	ConnectTimeout time.Duration
	// AckTimeout bounds the time from queueing a request to receiving its
	// ack. 0 means DefaultAckTimeout (5 s). A request not acked in time
	// fails with ErrAckTimeout; its connection stays up unless its peer
	// is gone (see DeadTimeout).
	AckTimeout time.Duration
	// DeadTimeout is how long a connection may go without any ack while
	// requests wait for theirs before an ack timeout takes its peer for
	// gone and fails the connection (ErrConnLost) instead of the one
	// request. 0 means DeadTimeoutFactor times AckTimeout. On Linux a
	// peer whose host stopped acknowledging TCP data for AckTimeout is
	// taken for gone sooner.
	DeadTimeout time.Duration
	// QueueSize is the per-connection write queue length
	// (DYN_TCP_CHANNEL_BUFFER). 0 means DefaultQueueSize (1024).
	QueueSize int
	// MaxMessageSize bounds path+headers+payload of one request; larger
	// requests fail with ErrTooLarge without being sent. 0 means
	// DefaultMaxMessageSize.
	MaxMessageSize int
	// Logger receives connection-level diagnostics. nil discards them.
	Logger *slog.Logger
}

// Client is the caller side of the TCP request plane. It keeps a pool of
// pipelined connections per address. The zero value is not usable; call
// NewClient.
type Client struct {
	cfg  ClientConfig
	log  *slog.Logger
	dial func(ctx context.Context, network, addr string) (net.Conn, error)

	mu     sync.Mutex // guards pools, every pool's fields, and closed
	pools  map[string]*pool
	closed bool
	wg     sync.WaitGroup // two per live connection
}

// pool is the set of connections to one address. Its fields are guarded by
// Client.mu.
type pool struct {
	conns   []*clientConn
	dialing int
	wait    *dialWait // wakes Sends waiting for a dial; nil if none wait
}

// dialWait is closed when a dial to its address finishes.
type dialWait struct {
	done chan struct{}
	err  error // the dial error, readable after done is closed
}

// NewClient returns a Client. It starts no goroutines.
func NewClient(cfg ClientConfig) *Client {
	if cfg.PoolSize <= 0 {
		cfg.PoolSize = DefaultPoolSize
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.AckTimeout <= 0 {
		cfg.AckTimeout = DefaultAckTimeout
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = DefaultQueueSize
	}
	if cfg.DeadTimeout <= 0 {
		cfg.DeadTimeout = DeadTimeoutFactor * cfg.AckTimeout
	}
	cfg.MaxMessageSize = maxSizeOr(cfg.MaxMessageSize)
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dialer := &net.Dialer{Timeout: cfg.ConnectTimeout}
	return &Client{
		cfg:   cfg,
		log:   log,
		dial:  dialer.DialContext,
		pools: make(map[string]*pool),
	}
}

// Send sends one request to the server at addr ("host:port") for path and
// waits for its ack. It returns nil when the server accepted the request, a
// *plane.AckError when it rejected it, and otherwise an error wrapping the
// cause (see the package doc). ctx bounds the whole call.
func (c *Client) Send(ctx context.Context, addr, path string, headers map[string]string, payload []byte) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("tcpplane: send to %s: %w", addr, err)
	}
	frame, err := encodeRequest(path, headers, payload, c.cfg.MaxMessageSize)
	if err != nil {
		return err
	}
	call := &call{frame: frame, result: make(chan error, 1)}
	timer := time.NewTimer(c.cfg.AckTimeout)
	defer timer.Stop()

	// A connection that breaks before the request is queued is replaced
	// once: nothing was sent, so trying again is safe.
	for attempt := 0; ; attempt++ {
		cc, err := c.conn(ctx, addr)
		if err != nil {
			return err
		}
		err = cc.send(ctx, call, timer.C)
		c.release(cc)
		if errors.Is(err, errNotQueued) && attempt == 0 {
			continue
		}
		return err
	}
}

// conn returns a connection to addr with one more request reserved on it:
// the least loaded one, or a new one while the pool has room and every
// existing connection is busy.
func (c *Client) conn(ctx context.Context, addr string) (*clientConn, error) {
	// The connect deadline is made only when a dial or a wait is needed,
	// keeping the common path free of timers.
	deadlineSet := false
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, ErrClosed
		}
		p := c.pools[addr]
		if p == nil {
			p = &pool{}
			c.pools[addr] = p
		}
		var best *clientConn
		for _, cc := range p.conns {
			if best == nil || cc.load < best.load {
				best = cc
			}
		}
		room := len(p.conns)+p.dialing < c.cfg.PoolSize
		if best != nil && (best.load == 0 || !room) {
			best.load++
			c.mu.Unlock()
			return best, nil
		}
		if !deadlineSet {
			deadlineSet = true
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, c.cfg.ConnectTimeout)
			defer cancel()
		}
		if room {
			p.dialing++
			c.mu.Unlock()
			return c.connect(ctx, addr, best)
		}
		// Every slot is being dialed: wait for one to finish.
		if p.wait == nil {
			p.wait = &dialWait{done: make(chan struct{})}
		}
		w := p.wait
		c.mu.Unlock()
		select {
		case <-w.done:
			if w.err != nil {
				return nil, w.err
			}
		case <-ctx.Done():
			return nil, fmt.Errorf("tcpplane: connect to %s: %w", addr, ctx.Err())
		}
	}
}

// connect dials a connection for a slot reserved by conn. If the dial
// fails and fallback is non-nil, the request goes to fallback instead.
func (c *Client) connect(ctx context.Context, addr string, fallback *clientConn) (*clientConn, error) {
	nc, err := c.dial(ctx, "tcp", addr)
	if err != nil {
		err = fmt.Errorf("tcpplane: connect to %s: %w", addr, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pools[addr]
	p.dialing--
	if w := p.wait; w != nil {
		// Waiters share a genuine dial failure (e.g. refused) but not the
		// end of this caller's context: they retry on their own deadline.
		if ctx.Err() == nil {
			w.err = err
		}
		close(w.done)
		p.wait = nil
	}
	if err == nil && c.closed {
		nc.Close()
		err = ErrClosed
	}
	if err != nil {
		c.dropEmpty(addr, p)
		if fallback != nil && !fallback.broken() {
			fallback.load++
			return fallback, nil
		}
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	cc := newClientConn(c, addr, nc)
	cc.load = 1
	p.conns = append(p.conns, cc)
	c.wg.Add(2)
	go cc.writeLoop()
	go cc.readLoop()
	return cc, nil
}

// release gives back the request slot reserved by conn.
func (c *Client) release(cc *clientConn) {
	c.mu.Lock()
	cc.load--
	c.mu.Unlock()
}

// remove takes a broken connection out of its pool.
func (c *Client) remove(cc *clientConn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pools[cc.addr]
	if p == nil {
		return
	}
	for i, x := range p.conns {
		if x == cc {
			p.conns = append(p.conns[:i], p.conns[i+1:]...)
			break
		}
	}
	c.dropEmpty(cc.addr, p)
}

// dropEmpty forgets the pool of addr when nothing uses it, so the map does
// not grow with every address ever called. c.mu must be held.
func (c *Client) dropEmpty(addr string, p *pool) {
	if len(p.conns) == 0 && p.dialing == 0 && p.wait == nil {
		delete(c.pools, addr)
	}
}

// Close closes every connection, failing the requests pending on them, and
// waits for the connection goroutines. Later Sends return ErrClosed. It is
// idempotent and returns nil.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	var conns []*clientConn
	for _, p := range c.pools {
		conns = append(conns, p.conns...)
	}
	c.mu.Unlock()
	for _, cc := range conns {
		cc.fail(ErrClosed)
	}
	c.wg.Wait()
	return nil
}
