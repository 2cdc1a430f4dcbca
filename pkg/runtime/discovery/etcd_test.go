package discovery_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/runtime/discovery"
	"github.com/google/go-cmp/cmp"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// rawEtcd returns a plain etcd client, playing another process or an
// operator.
func rawEtcd(t *testing.T, srv *testenv.Etcd) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.URL}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// TestEtcdRestart restarts etcd under a running store: the store keeps its
// lease, its keys survive (or are re-created), and watches keep reporting.
func TestEtcdRestart(t *testing.T) {
	t.Parallel()
	const ttl = 5 * time.Second
	srv := testenv.StartEtcd(t)
	s := newEtcd(t, srv, ttl)
	runStore(t, s)
	watcher := newEtcd(t, srv, ttl)
	runStore(t, watcher)
	ctx := t.Context()
	const p = "restart/"
	for _, k := range []string{"a", "lost"} {
		if err := s.Put(ctx, p+k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	other, err := watcher.Watch(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	own, err := s.Watch(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	vOther, vOwn := view{}, view{}
	waitView(t, other, vOther, view{p + "a": "a", p + "lost": "lost"}, waitLong)
	waitView(t, own, vOwn, view{p + "a": "a", p + "lost": "lost"}, waitLong)

	// Lose one owned key behind the store's back; it must come back once
	// the store notices the restart.
	if _, err := rawEtcd(t, srv).Delete(ctx, p+"lost"); err != nil {
		t.Fatal(err)
	}
	waitView(t, other, vOther, view{p + "a": "a"}, waitLong)

	t.Log("stopping etcd")
	srv.Stop()
	time.Sleep(time.Second)
	t.Log("starting etcd")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Log("started etcd")
	restarted := time.Now()

	pctx, cancel := context.WithTimeout(ctx, waitLong)
	defer cancel()
	if err := s.Put(pctx, p+"b", []byte("b")); err != nil {
		t.Fatalf("Put after restart: %v", err)
	}
	want := view{p + "a": "a", p + "b": "b", p + "lost": "lost"}
	waitView(t, other, vOther, want, waitLong)
	waitView(t, own, vOwn, want, waitLong)
	t.Logf("caught up %v after the restart", time.Since(restarted))

	// The lease is still kept alive well past its TTL.
	time.Sleep(ttl + time.Second)
	select {
	case <-s.Done():
		t.Fatalf("Done closed after restart: %v", s.Err())
	default:
	}
	got, err := watcher.List(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(kvs(p+"a", "a", p+"b", "b", p+"lost", "lost"), got); diff != "" {
		t.Errorf("List after restart (-want +got):\n%s", diff)
	}
	if err := s.Put(ctx, p+"c", []byte("c")); err != nil {
		t.Fatal(err)
	}
	want[p+"c"] = "c"
	waitView(t, other, vOther, want, waitLong)
}

// TestEtcdLeaseLostIsReplaced revokes the store's lease from outside, as
// an expiry during a long outage would: the store must not stop; it takes
// a new lease and writes its keys again, under the same instance id.
func TestEtcdLeaseLostIsReplaced(t *testing.T) {
	t.Parallel()
	srv := testenv.StartEtcd(t)
	s := newEtcd(t, srv, 4*time.Second)
	runStore(t, s)
	ctx := t.Context()
	id := s.ID()
	if err := s.Put(ctx, "lost/a", []byte("a")); err != nil {
		t.Fatal(err)
	}
	raw := rawEtcd(t, srv)
	if _, err := raw.Revoke(ctx, clientv3.LeaseID(id)); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, waitLong, "the key to be written again under a new lease", func() bool {
		resp, err := raw.Get(ctx, "lost/a")
		return err == nil && len(resp.Kvs) == 1 && resp.Kvs[0].Lease != int64(id) && resp.Kvs[0].Lease != 0
	})
	select {
	case <-s.Done():
		t.Fatalf("Done closed after the lease was lost: %v", s.Err())
	default:
	}
	if s.ID() != id {
		t.Errorf("instance id changed from %x to %x", id, s.ID())
	}
	if err := s.Put(ctx, "lost/b", []byte("b")); err != nil {
		t.Errorf("Put after the new lease: %v", err)
	}
	resp, err := raw.Get(ctx, "lost/", clientv3.WithPrefix())
	if err != nil || len(resp.Kvs) != 2 || resp.Kvs[0].Lease != resp.Kvs[1].Lease {
		t.Fatalf("keys after the new lease: %v, %v; want both under one lease", resp, err)
	}
	// The new lease is the one kept alive and revoked at Close.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if resp, err := raw.Get(ctx, "lost/", clientv3.WithPrefix()); err != nil || len(resp.Kvs) != 0 {
		t.Errorf("keys after Close: %v, %v; want none", resp, err)
	}
}

// TestNewEtcdConnect checks that NewEtcd waits for etcd to come up, and
// gives up when its ctx ends.
func TestNewEtcdConnect(t *testing.T) {
	t.Parallel()
	t.Run("GivesUp", func(t *testing.T) {
		url := fmt.Sprintf("http://127.0.0.1:%d", testenv.FreePort(t))
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		s, err := discovery.NewEtcd(ctx, discovery.EtcdConfig{Endpoints: []string{url}, DialTimeout: 300 * time.Millisecond})
		if err == nil {
			s.Close()
			t.Fatal("NewEtcd succeeded without a server")
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want DeadlineExceeded", err)
		}
	})
	t.Run("WaitsForServer", func(t *testing.T) {
		srv := testenv.StartEtcd(t)
		srv.Stop()
		go func() {
			time.Sleep(time.Second)
			if err := srv.Start(); err != nil {
				t.Error(err)
			}
		}()
		s := newEtcd(t, srv, 0)
		if s.ID() == 0 {
			t.Error("ID = 0")
		}
	})
	t.Run("Config", func(t *testing.T) {
		for _, cfg := range []discovery.EtcdConfig{
			{},
			{Endpoints: []string{"http://127.0.0.1:1"}, TTL: -time.Second},
		} {
			if _, err := discovery.NewEtcd(t.Context(), cfg); err == nil {
				t.Errorf("NewEtcd(%+v) succeeded", cfg)
			}
		}
	})
}
