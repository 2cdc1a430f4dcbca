package discovery

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// keepAliveRetry is the pause between attempts to reach etcd when the
// keep-alive stream has ended.
const keepAliveRetry = 500 * time.Millisecond

// Run keeps the lease alive until ctx ends or the store is closed (nil).
// Done is closed with ErrLeaseLost, and Run returns ErrLeaseLost, when etcd
// reports the lease gone (revoked or expired), or when etcd stays
// unreachable for too long.
//
// Keep-alives go over one long-lived stream (clientv3's KeepAlive, a
// request every TTL/3), which an etcd that is shutting down gracefully
// still serves. If the stream ends without our asking, Run asks etcd
// directly, every 500 ms, whether the lease is alive, for as long as it may
// be: its TTL after the last keep-alive, plus one more TTL of grace,
// because an etcd that was itself down (a restart) extends every lease
// when it elects a leader again. Once etcd answers, its answer decides.
//
// After an interruption (the stream ended, keep-alives stalled for more
// than TTL/2 + 1 s, or a new raft term: etcd restarted or changed leader) Run
// re-creates the owned keys that are missing, under the same lease.
//
// Run must not be called twice at the same time.
func (e *Etcd) Run(ctx context.Context) error {
	if !e.runMu.TryLock() {
		return errors.New("discovery: etcd store: Run is already running")
	}
	defer e.runMu.Unlock()
	if e.Err() != nil {
		return e.runResult()
	}
	ctx, cancel := e.runContext(ctx)
	defer cancel()
	interrupted := false
	for {
		err := e.keepAlive(ctx, &interrupted)
		if e.stopping(ctx) {
			return nil
		}
		e.log.Warn("discovery: etcd keep-alive stream ended; checking the lease", "lease", e.leaseHex(), "err", err)
		interrupted = true
		if err := e.confirm(ctx); err != nil {
			if e.stopping(ctx) {
				return nil
			}
			e.log.Error("discovery: etcd lease lost", "lease", e.leaseHex(), "err", err)
			return e.lost()
		}
	}
}

// keepAlive runs one keep-alive stream until it ends, recording each
// answer. It sets *interrupted when keep-alives stall or etcd changes raft
// term, and clears it once the owned keys are re-created.
func (e *Etcd) keepAlive(ctx context.Context, interrupted *bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := e.cli.KeepAlive(ctx, e.lease)
	if err != nil {
		return err
	}
	stall := time.NewTimer(e.stallAfter())
	defer stall.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-stall.C:
			if !*interrupted {
				e.log.Warn("discovery: etcd keep-alives stalled", "lease", e.leaseHex())
			}
			*interrupted = true
			stall.Reset(e.stallAfter())
		case resp, ok := <-ch:
			if !ok {
				return errors.New("keep-alive channel closed")
			}
			stall.Reset(e.stallAfter())
			e.renewed(resp.ResponseHeader.GetRaftTerm(), resp.TTL, interrupted)
			if *interrupted {
				*interrupted = e.recreate(ctx) != nil
			}
		}
	}
}

// confirm asks etcd whether the lease is alive, renewing it, until etcd
// answers or the lease cannot be alive any more. It returns nil if the
// lease is alive.
func (e *Etcd) confirm(ctx context.Context) error {
	attempt := min(max(e.ttl/3, keepAliveRetry), e.dialTimeout)
	for {
		left := time.Until(e.expires.Add(e.ttl))
		if left <= 0 {
			return errors.New("etcd unreachable for longer than the lease could last")
		}
		actx, cancel := context.WithTimeout(ctx, min(attempt, left))
		resp, err := e.cli.KeepAliveOnce(actx, e.lease)
		cancel()
		switch {
		case err == nil:
			interrupted := true
			e.renewed(resp.ResponseHeader.GetRaftTerm(), resp.TTL, &interrupted)
			return nil
		case errors.Is(err, rpctypes.ErrLeaseNotFound), ctx.Err() != nil:
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(keepAliveRetry):
		}
	}
}

// renewed records a keep-alive answer received now: the lease lives ttl
// seconds more. A new raft term sets *interrupted.
func (e *Etcd) renewed(term uint64, ttl int64, interrupted *bool) {
	e.expires = time.Now().Add(time.Duration(ttl) * time.Second)
	if term != e.term {
		e.term = term
		*interrupted = true
	}
}

// recreate puts back the owned keys that are missing, under the lease.
func (e *Etcd) recreate(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, e.dialTimeout)
	defer cancel()
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, key := range slices.Sorted(maps.Keys(e.owned)) {
		resp, err := e.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.Version(key), "=", 0)).
			Then(clientv3.OpPut(key, string(e.owned[key]), clientv3.WithLease(e.lease))).
			Commit()
		if err != nil {
			e.log.Warn("discovery: etcd: re-create owned keys", "key", key, "err", err)
			return err
		}
		if resp.Succeeded {
			e.log.Info("discovery: etcd: re-created missing key", "key", key, "lease", e.leaseHex())
		}
	}
	return nil
}

// lost closes Done with ErrLeaseLost and returns what Run should return.
func (e *Etcd) lost() error {
	e.lose()
	return e.runResult()
}

// runResult is what Run returns once Done is closed: ErrLeaseLost, or nil
// if the store was closed.
func (e *Etcd) runResult() error {
	if err := e.Err(); errors.Is(err, ErrLeaseLost) {
		return err
	}
	return nil
}

// stopping reports whether Run should return: its ctx ended or the store
// stopped. (ctx follows the store's stop only asynchronously.)
func (e *Etcd) stopping(ctx context.Context) bool {
	return ctx.Err() != nil || e.life.ctx.Err() != nil
}

// leaseHex is the lease id as logs and keys show it.
func (e *Etcd) leaseHex() string { return strconv.FormatUint(e.ID(), 16) }

// stallAfter is how long keep-alives may go unanswered before Run counts
// it as an interruption. clientv3 sends one every TTL/3, rounded down to
// whole seconds, checking every 500 ms.
func (e *Etcd) stallAfter() time.Duration { return e.ttl/2 + time.Second }
