package discovery

import (
	"context"
	"errors"
	"fmt"
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

// Run keeps the lease alive until ctx ends or the store is closed; then it
// returns nil. Losing etcd does not end it (static stability).
//
// Keep-alives go over one long-lived stream (clientv3's KeepAlive, a
// request every TTL/3), which an etcd that is shutting down gracefully
// still serves. If the stream ends without our asking, or keep-alives stall
// for more than TTL/2 + 1 s, the store counts etcd as unreachable
// (Connectivity, one log line) and asks etcd, every 500 ms and for as long
// as it takes, whether the lease is alive. Once etcd answers, its answer
// decides: a live lease is kept (an etcd that was itself down extends every
// lease when it elects a leader again) and the owned keys that are missing
// are re-created under it; a lease that expired meanwhile is replaced by a
// new one, under which every owned key is written again. Then the outage
// is over (one more log line).
//
// Run must not be called twice at the same time.
func (e *Etcd) Run(ctx context.Context) error {
	if !e.runMu.TryLock() {
		return errors.New("discovery: etcd store: Run is already running")
	}
	defer e.runMu.Unlock()
	if e.Err() != nil {
		return nil
	}
	ctx, cancel := e.runContext(ctx)
	defer cancel()
	interrupted := false
	for {
		err := e.keepAlive(ctx, &interrupted)
		if e.stopping(ctx) {
			return nil
		}
		e.link.down(err)
		interrupted = true
		alive, err := e.confirm(ctx)
		if e.stopping(ctx) {
			return nil
		}
		if !alive {
			e.log.Warn("discovery: etcd lease expired while etcd was unreachable; taking a new one", "lease", e.leaseHex(), "err", err)
			if err := e.regrant(ctx); err != nil {
				return nil // stopping
			}
		}
	}
}

// keepAlive runs one keep-alive stream until it ends, recording each
// answer. It sets *interrupted when keep-alives stall or etcd changes raft
// term, and clears it once the owned keys are re-created, which ends the
// outage. A request to check the lease (a write found it gone) ends the
// stream.
func (e *Etcd) keepAlive(ctx context.Context, interrupted *bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := e.cli.KeepAlive(ctx, e.currentLease())
	if err != nil {
		return err
	}
	stall := time.NewTimer(e.stallAfter())
	defer stall.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-e.kick:
			return errors.New("a write found the lease gone")
		case <-stall.C:
			e.link.down(errors.New("keep-alives stalled"))
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
				if !*interrupted {
					e.link.up()
				}
			}
		}
	}
}

// confirm asks etcd whether the lease is alive, renewing it, until etcd
// answers (or ctx ends). It reports whether the lease is alive.
func (e *Etcd) confirm(ctx context.Context) (bool, error) {
	attempt := min(max(e.ttl/3, keepAliveRetry), e.dialTimeout)
	for {
		actx, cancel := context.WithTimeout(ctx, attempt)
		resp, err := e.cli.KeepAliveOnce(actx, e.currentLease())
		cancel()
		switch {
		case err == nil:
			interrupted := true
			e.renewed(resp.ResponseHeader.GetRaftTerm(), resp.TTL, &interrupted)
			return true, nil
		case errors.Is(err, rpctypes.ErrLeaseNotFound):
			return false, err
		case ctx.Err() != nil:
			return false, ctx.Err()
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(keepAliveRetry):
		}
	}
}

// regrant takes a new lease, retrying until etcd grants one or ctx ends,
// and writes every owned key under it (and deletes those whose Delete did
// not reach etcd). The outage ends when that succeeds; else the next
// keep-alive retries it.
func (e *Etcd) regrant(ctx context.Context) error {
	delay := 100 * time.Millisecond
	for {
		gctx, cancel := context.WithTimeout(ctx, e.dialTimeout)
		resp, err := e.cli.Grant(gctx, e.ttlSeconds)
		cancel()
		if err == nil {
			e.mu.Lock()
			e.lease = resp.ID
			e.mu.Unlock()
			e.expires = time.Now().Add(time.Duration(resp.TTL) * time.Second)
			e.term = resp.RaftTerm
			if e.recreate(ctx) == nil {
				e.link.up()
			}
			e.log.Info("discovery: etcd: keys written again under a new lease", "lease", e.leaseHex(), "keys", e.ownedCount())
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, maxRetryDelay)
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

// recreate puts back the owned keys that are missing, under the current
// lease, and deletes the keys whose Delete did not reach etcd.
func (e *Etcd) recreate(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, e.dialTimeout)
	defer cancel()
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, key := range slices.Sorted(maps.Keys(e.unwanted)) {
		if _, err := e.cli.Delete(ctx, key); err != nil {
			e.log.Debug("discovery: etcd: delete a key removed during the outage", "key", key, "err", err)
			return err
		}
		delete(e.unwanted, key)
	}
	for _, key := range slices.Sorted(maps.Keys(e.owned)) {
		resp, err := e.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.Version(key), "=", 0)).
			Then(clientv3.OpPut(key, string(e.owned[key]), clientv3.WithLease(e.lease))).
			Commit()
		if err != nil {
			e.log.Debug("discovery: etcd: re-create owned keys", "key", key, "err", err)
			if errors.Is(err, rpctypes.ErrLeaseNotFound) {
				e.checkLease()
			}
			return err
		}
		if resp.Succeeded {
			e.log.Info("discovery: etcd: re-created missing key", "key", key, "lease", strconv.FormatInt(int64(e.lease), 16))
		}
	}
	return nil
}

// currentLease returns the lease the store's keys are attached to now.
func (e *Etcd) currentLease() clientv3.LeaseID {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lease
}

func (e *Etcd) ownedCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.owned)
}

// stopping reports whether Run should return: its ctx ended or the store
// stopped. (ctx follows the store's stop only asynchronously.)
func (e *Etcd) stopping(ctx context.Context) bool {
	return ctx.Err() != nil || e.life.ctx.Err() != nil
}

// leaseHex is the current lease id as logs show it.
func (e *Etcd) leaseHex() string { return strconv.FormatUint(uint64(e.currentLease()), 16) }

// stallAfter is how long keep-alives may go unanswered before Run counts
// it as an interruption. clientv3 sends one every TTL/3, rounded down to
// whole seconds, checking every 500 ms.
func (e *Etcd) stallAfter() time.Duration { return e.ttl/2 + time.Second }

// Renew renews the lease once. A process that waits for another of its
// dependencies before Run keeps its lease with it, so that the wait does
// not cost the lease (and look like an etcd outage once Run starts).
func (e *Etcd) Renew(ctx context.Context) error {
	actx, cancel := context.WithTimeout(ctx, e.dialTimeout)
	defer cancel()
	resp, err := e.cli.KeepAliveOnce(actx, e.currentLease())
	if err != nil {
		return fmt.Errorf("discovery: renew the lease: %w", err)
	}
	interrupted := false
	e.renewed(resp.ResponseHeader.GetRaftTerm(), resp.TTL, &interrupted)
	return nil
}
