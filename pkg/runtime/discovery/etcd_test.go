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

// TestEtcdLeaseLost revokes the store's lease from outside: the store must
// notice and stop.
func TestEtcdLeaseLost(t *testing.T) {
	t.Parallel()
	srv := testenv.StartEtcd(t)
	s := newEtcd(t, srv, 4*time.Second)
	run := runStore(t, s)
	ctx := t.Context()
	if err := s.Put(ctx, "lost/a", []byte("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := rawEtcd(t, srv).Revoke(ctx, clientv3.LeaseID(s.ID())); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	case <-time.After(waitLong):
		t.Fatal("Done not closed after the lease was revoked")
	}
	if err := s.Err(); !errors.Is(err, discovery.ErrLeaseLost) {
		t.Errorf("Err = %v, want ErrLeaseLost", err)
	}
	if err := run.wait(t); !errors.Is(err, discovery.ErrLeaseLost) {
		t.Errorf("Run = %v, want ErrLeaseLost", err)
	}
	if err := s.Put(ctx, "lost/b", []byte("b")); !errors.Is(err, discovery.ErrLeaseLost) {
		t.Errorf("Put after loss = %v, want ErrLeaseLost", err)
	}
	if err := s.Run(ctx); !errors.Is(err, discovery.ErrLeaseLost) {
		t.Errorf("Run after loss = %v, want ErrLeaseLost", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close after loss: %v", err)
	}
	if err := s.Err(); !errors.Is(err, discovery.ErrLeaseLost) {
		t.Errorf("Err after Close = %v, want ErrLeaseLost still", err)
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
