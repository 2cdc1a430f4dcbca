package discovery

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// EtcdConfig configures an Etcd store.
type EtcdConfig struct {
	// Endpoints are the etcd client URLs, e.g. "http://127.0.0.1:2379".
	// Required.
	Endpoints []string
	// TTL is the lease TTL, rounded up to whole seconds (etcd may grant
	// more). Zero means DefaultTTL.
	TTL time.Duration
	// DialTimeout bounds each connection attempt, the keep-alive attempts'
	// ceiling and the lease revocation in Close. Zero means 5 s.
	DialTimeout time.Duration
	// Username and Password enable etcd authentication when both are set.
	Username, Password string
	// TLS, if set, is used to connect (https endpoints).
	TLS *tls.Config
	// Logger receives connection, keep-alive and watch warnings. Nil
	// discards them.
	Logger *slog.Logger
	// WaitAdvice is appended to the one line NewEtcd logs when etcd does
	// not answer at first: the settings that change where it is looked
	// for and how long it is waited for.
	WaitAdvice string
}

// Etcd is a Store in etcd (the "etcd" discovery back-end). Every key it
// writes is attached to one lease per process; the first lease's id is the
// instance id, for the life of the store. Run keeps the lease alive; Close
// revokes it, so the keys vanish at once; if the process dies they vanish
// after the TTL.
//
// Etcd is statically stable: losing etcd, for any length of time, never
// ends it. It remembers the keys it owns (written by Create or Put, not
// removed by Delete). When etcd answers again after an interruption, it
// re-creates any owned key that is missing under the same lease, or, if the
// lease expired meanwhile, takes a new lease and writes every owned key
// under it (the keys keep their names: the instance id does not change).
// Its watches hold back deletions while etcd is unreachable and for a
// while after it returns (see Watch). Connectivity reports the outage.
type Etcd struct {
	cli         *clientv3.Client
	id          uint64        // the first lease's id: the instance id
	ttl         time.Duration // as granted
	ttlSeconds  int64         // as asked
	dialTimeout time.Duration
	holdFor     time.Duration // see Watch
	log         *slog.Logger
	link        *link
	kick        chan struct{} // asks Run to check the lease now
	*life

	mu       sync.Mutex        // serializes writes and re-creation
	lease    clientv3.LeaseID  // the current lease
	owned    map[string][]byte // keys written under the lease
	unwanted map[string]bool   // owned keys whose Delete did not reach etcd

	runMu   sync.Mutex // held by Run
	expires time.Time  // when the lease expires unless kept alive; under runMu
	term    uint64     // raft term of the last keep-alive; under runMu
}

var _ Store = (*Etcd)(nil)

// Timings of the etcd store.
const (
	defaultDialTimeout = 5 * time.Second
	maxRetryDelay      = 2 * time.Second
)

// NewEtcd connects to etcd and grants the store's lease. It retries until
// it succeeds or ctx ends; the caller bounds start-up time with ctx. It
// does not retry what retrying cannot cure: an error wrapping
// ErrAuthFailed or ErrTLS returns at once. It starts nothing in the
// background; call Run to keep the lease alive.
func NewEtcd(ctx context.Context, cfg EtcdConfig) (*Etcd, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("discovery: etcd store: no Endpoints")
	}
	if cfg.TTL < 0 || cfg.DialTimeout < 0 {
		return nil, errors.New("discovery: etcd store: negative TTL or DialTimeout")
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = defaultDialTimeout
	}
	log := orDiscard(cfg.Logger)
	ccfg := clientv3.Config{
		Endpoints:            cfg.Endpoints,
		DialTimeout:          cfg.DialTimeout,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 5 * time.Second,
		Username:             cfg.Username,
		Password:             cfg.Password,
		TLS:                  cfg.TLS,
		Logger:               zap.NewNop(),
		// Values are at most MaxValueSize (1 MiB); a list of many may be
		// larger than the client's default 2 MiB in.
		MaxCallRecvMsgSize: 256 << 20,
		DialOptions: []grpc.DialOption{
			// Reconnect within a second or so of etcd coming back, rather
			// than after gRPC's default backoff of up to two minutes.
			grpc.WithConnectParams(grpc.ConnectParams{
				Backoff: backoff.Config{
					BaseDelay:  100 * time.Millisecond,
					Multiplier: 1.6,
					Jitter:     0.2,
					MaxDelay:   time.Second,
				},
				MinConnectTimeout: cfg.DialTimeout,
			}),
		},
	}
	ttlSeconds := int64((cfg.TTL + time.Second - 1) / time.Second)
	var (
		cli     *clientv3.Client
		err     error
		delay   = 100 * time.Millisecond
		waiting time.Time // when the first attempt failed; zero before
	)
	for {
		if cli == nil {
			if err = checkTLS(ctx, cfg); err == nil {
				cli, err = clientv3.New(ccfg)
			}
		}
		if cli != nil {
			var resp *clientv3.LeaseGrantResponse
			gctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
			granted := time.Now()
			if err = checkNeedsUser(gctx, cli, cfg); err == nil {
				resp, err = cli.Grant(gctx, ttlSeconds)
			}
			cancel()
			if err == nil {
				if !waiting.IsZero() {
					log.Info("discovery: etcd reached", "endpoints", cfg.Endpoints, "waited", time.Since(waiting).Round(time.Millisecond))
				}
				ttl := time.Duration(resp.TTL) * time.Second
				return &Etcd{
					cli:         cli,
					id:          uint64(resp.ID),
					lease:       resp.ID,
					ttl:         ttl,
					ttlSeconds:  ttlSeconds,
					dialTimeout: cfg.DialTimeout,
					holdFor:     max(ttl, 5*time.Second),
					log:         log,
					link:        newLink(log, "etcd"),
					kick:        make(chan struct{}, 1),
					life:        newLife(),
					owned:       make(map[string][]byte),
					unwanted:    make(map[string]bool),
					expires:     granted.Add(ttl),
					term:        resp.RaftTerm,
				}, nil
			}
		}
		if he := permanent(err); he != nil {
			if cli != nil {
				cli.Close()
			}
			return nil, fmt.Errorf("discovery: connect to etcd %v: %w", cfg.Endpoints, he)
		}
		logWaiting(ctx, log, cfg, waiting.IsZero(), err)
		if waiting.IsZero() {
			waiting = time.Now()
		}
		select {
		case <-ctx.Done():
			if cli != nil {
				cli.Close()
			}
			return nil, fmt.Errorf("discovery: connect to etcd %v: %w (last error: %w)", cfg.Endpoints, ctx.Err(), err)
		case <-time.After(delay):
		}
		delay = min(2*delay, maxRetryDelay)
	}
}

// logWaiting logs that etcd did not answer: the first time at warn, with
// where, until when (ctx's deadline) and what to set; later at debug.
func logWaiting(ctx context.Context, log *slog.Logger, cfg EtcdConfig, first bool, err error) {
	if !first {
		log.Debug("discovery: etcd still unreachable", "endpoints", cfg.Endpoints, "err", err)
		return
	}
	args := []any{"endpoints", cfg.Endpoints, "err", err}
	if d, ok := ctx.Deadline(); ok {
		args = append(args, "until", d.Format(time.TimeOnly))
	}
	if cfg.WaitAdvice != "" {
		args = append(args, "advice", cfg.WaitAdvice)
	}
	log.Warn("discovery: waiting for etcd; retrying", args...)
}

// Done is closed when the lease is lost or the store is closed (or orphaned).
func (e *Etcd) Done() <-chan struct{} { return e.life.Done() }

// Err returns ErrLeaseLost or ErrClosed once Done is closed, nil before.
func (e *Etcd) Err() error { return e.life.Err() }

// ID returns the instance id: the id of the store's first lease.
func (e *Etcd) ID() uint64 { return e.id }

// Connectivity reports whether etcd answers this store's keep-alives.
func (e *Etcd) Connectivity() Connectivity { return e.link.get() }

// Create writes key=value under the lease if key is absent; see Store.
func (e *Etcd) Create(ctx context.Context, key string, value []byte) error {
	if err := e.check("create"); err != nil {
		return err
	}
	if err := checkValue(key, value); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	resp, err := e.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.Version(key), "=", 0)).
		Then(clientv3.OpPut(key, string(value), clientv3.WithLease(e.lease))).
		Else(clientv3.OpGet(key)).
		Commit()
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		e.adopt(key, value) // written with the new lease
		return nil
	}
	if err != nil {
		return e.wrap("create", key, err)
	}
	if resp.Succeeded {
		e.owned[key] = bytes.Clone(value)
		delete(e.unwanted, key)
		return nil
	}
	for _, r := range resp.Responses {
		for _, kv := range r.GetResponseRange().GetKvs() {
			if !bytes.Equal(kv.Value, value) {
				return fmt.Errorf("%w: %q", ErrExists, key)
			}
			if kv.Lease == int64(e.lease) {
				e.owned[key] = bytes.Clone(value)
			}
		}
	}
	return nil
}

// Put writes key=value under the lease; see Store.
func (e *Etcd) Put(ctx context.Context, key string, value []byte) error {
	if err := e.check("put"); err != nil {
		return err
	}
	if err := checkValue(key, value); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, err := e.cli.Put(ctx, key, string(value), clientv3.WithLease(e.lease))
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		e.adopt(key, value) // written with the new lease
		return nil
	}
	if err != nil {
		return e.wrap("put", key, err)
	}
	e.owned[key] = bytes.Clone(value)
	delete(e.unwanted, key)
	return nil
}

// adopt records key=value as owned when the lease turned out to be gone,
// and asks Run to take a new lease, which writes every owned key. Called
// with mu held.
func (e *Etcd) adopt(key string, value []byte) {
	e.owned[key] = bytes.Clone(value)
	delete(e.unwanted, key)
	e.checkLease()
}

// checkLease asks Run to check the lease at once.
func (e *Etcd) checkLease() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// Delete removes key, whoever wrote it; see Store.
func (e *Etcd) Delete(ctx context.Context, key string) error {
	if err := e.check("delete"); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, owned := e.owned[key]
	delete(e.owned, key)
	if _, err := e.cli.Delete(ctx, key); err != nil {
		if owned {
			e.unwanted[key] = true // deleted when etcd answers again
		}
		return e.wrap("delete", key, err)
	}
	delete(e.unwanted, key)
	return nil
}

// List returns the entries under prefix, sorted by key.
func (e *Etcd) List(ctx context.Context, prefix string) ([]KeyValue, error) {
	if err := e.check("list"); err != nil {
		return nil, err
	}
	kvs, _, err := e.list(ctx, prefix)
	return kvs, err
}

// list returns the entries under prefix and the revision they were read at.
func (e *Etcd) list(ctx context.Context, prefix string) ([]KeyValue, int64, error) {
	resp, err := e.cli.Get(ctx, prefix, clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return nil, 0, e.wrap("list", prefix, err)
	}
	kvs := make([]KeyValue, len(resp.Kvs))
	for i, kv := range resp.Kvs {
		kvs[i] = KeyValue{Key: string(kv.Key), Value: kv.Value}
	}
	return kvs, resp.Header.Revision, nil
}

// Close revokes the lease, so that every key of this store vanishes at
// once, ends the watches and closes the client. If etcd cannot be reached
// within DialTimeout, the keys expire after the TTL instead. It is
// idempotent.
func (e *Etcd) Close() error {
	if !e.stop() {
		return nil
	}
	var errs []error
	ctx, cancel := context.WithTimeout(context.Background(), e.dialTimeout)
	e.mu.Lock()
	lease := e.lease
	e.mu.Unlock()
	_, err := e.cli.Revoke(ctx, lease)
	cancel()
	if err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		errs = append(errs, fmt.Errorf("discovery: revoke lease %x: %w", e.ID(), err))
	}
	e.wait()
	if err := e.cli.Close(); err != nil && !errors.Is(err, context.Canceled) {
		errs = append(errs, fmt.Errorf("discovery: close etcd client: %w", err))
	}
	e.mu.Lock()
	clear(e.owned)
	e.mu.Unlock()
	return errors.Join(errs...)
}

// Orphan stops keeping the lease alive and closes the client without
// revoking the lease, as if the process had died: the keys expire after
// the TTL. Done is closed with ErrClosed, watches end and Run returns nil.
// Close is then a no-op. (etcd's concurrency.Session has the same idea.)
func (e *Etcd) Orphan() {
	if !e.stop() {
		return
	}
	e.wait()
	e.cli.Close()
}

// wrap wraps an etcd error for op on key. A missing lease makes Run take
// a new one.
func (e *Etcd) wrap(op, key string, err error) error {
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		e.checkLease()
	}
	return fmt.Errorf("discovery: %s %q: %w", op, key, err)
}
