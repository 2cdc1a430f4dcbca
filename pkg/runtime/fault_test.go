package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/runtime/internal/tcpplane"
)

// A worker process killed mid-stream: every stream it carried (all on one
// shared connection) fails with the typed Disconnected error within a
// second, and the instance disappears from discovery when its lease
// expires.
func TestWorkerCrashMidStream(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	forEach(t, matrix[:4], func(t *testing.T, c *cluster) {
		c.ttl = 2 * time.Second
		caller := c.start(t)
		w := startWorkerProcess(t, c)
		cl := client(t, caller, 1)
		if cl.InstanceIDs()[0] != w.id {
			t.Fatalf("discovered %x, want the worker process's %x", cl.InstanceIDs()[0], w.id)
		}
		killedAt, errs, got := streamsUntil(t, cl, w.id, func() {
			if a, _ := runtime.SharedConns(caller.DistributedRuntime); a != 1 {
				t.Errorf("the caller holds %d shared connections from the worker, want 1 for all its streams", a)
			}
			_ = w.cmd.Process.Signal(syscall.SIGKILL)
		})
		elapsed := time.Since(killedAt)
		for i, err := range errs {
			if !errors.Is(err, runtime.ErrDisconnected) || !strings.Contains(err.Error(), runtime.MsgStreamEnded) {
				t.Fatalf("stream %d after the worker died = %v, want Disconnected: %s", i, err, runtime.MsgStreamEnded)
			}
			if len(got[i]) < 21 {
				t.Fatalf("stream %d got %d items before the crash, want at least 21", i, len(got[i]))
			}
			checkSequence(t, got[i], len(got[i]))
		}
		if elapsed > time.Second {
			t.Fatalf("the disconnects surfaced after %s, want < 1s", elapsed)
		}
		// Nobody revoked the lease: it must expire.
		testenv.WaitFor(t, c.ttl+10*time.Second, "the dead worker's lease to expire", func() bool { return len(cl.InstanceIDs()) == 0 })
	})
}

// crashStreams is how many streams the fault tests run on one worker.
const crashStreams = 4

// streamsUntil runs crashStreams long streams on worker id and calls fault
// once each has received 20 items. It returns when fault happened, and
// each stream's error and items.
func streamsUntil(t *testing.T, cl *runtime.Client, id uint64, fault func()) (time.Time, []error, [][]int) {
	t.Helper()
	var (
		at      time.Time
		started sync.WaitGroup
		wg      sync.WaitGroup
		errs    = make([]error, crashStreams)
		got     = make([][]int, crashStreams)
		faulted = make(chan struct{})
	)
	started.Add(crashStreams)
	for i := range crashStreams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rc := runtime.NewContext(t.Context(), "")
			got[i], errs[i] = collect(rc, cl, id, countRequest{N: 1_000_000, DelayUS: 1000}, func(n int) {
				if n == 20 {
					started.Done()
				}
			})
		}()
	}
	go func() {
		started.Wait()
		at = time.Now()
		fault()
		close(faulted)
	}()
	wg.Wait()
	<-faulted
	return at, errs, got
}

// A worker process frozen mid-stream (SIGSTOP: its kernel still holds the
// connection open, nothing is sent): once its lease expires and it leaves
// discovery, each of its streams may stay silent only for
// OrphanedStreamTimeout; then it fails Disconnected, which migration
// re-issues.
func TestFrozenWorkerStreamFailsAfterItLeavesDiscovery(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	c := newCluster(t, setup{runtime.DiscoveryEtcd, runtime.PlaneTCP})
	c.ttl = 2 * time.Second
	cfg := c.config()
	cfg.OrphanedStreamTimeout = time.Second
	caller := startRuntime(t, cfg, c.mem)
	w := startWorkerProcess(t, c)
	defer func() { _ = w.cmd.Process.Signal(syscall.SIGKILL) }()
	cl := client(t, caller, 1)
	frozenAt, errs, got := streamsUntil(t, cl, w.id, func() { _ = w.cmd.Process.Signal(syscall.SIGSTOP) })
	elapsed := time.Since(frozenAt)
	for i, err := range errs {
		if !errors.Is(err, runtime.ErrDisconnected) || !strings.Contains(err.Error(), "silent") {
			t.Fatalf("stream %d to a frozen worker = %v, want Disconnected after a silence", i, err)
		}
		checkSequence(t, got[i], len(got[i]))
	}
	if len(cl.InstanceIDs()) != 0 {
		t.Error("the streams failed while the frozen worker was still listed in discovery")
	}
	if elapsed < cfg.OrphanedStreamTimeout {
		t.Errorf("the streams failed %s after the freeze, before the orphan timeout could pass", elapsed)
	}
	t.Logf("the frozen worker's streams failed %s after the freeze (lease TTL %s, orphan timeout %s)", elapsed.Round(time.Millisecond), c.ttl, cfg.OrphanedStreamTimeout)
}

// A request whose worker acked but never called home fails as soon as the
// instance leaves discovery, and new calls to it fail fast for a while.
func TestPendingCallFailsWhenInstanceLeaves(t *testing.T) {
	c := newCluster(t, setup{runtime.DiscoveryEtcd, runtime.PlaneTCP})
	caller := c.start(t)
	// A fake worker: accepts requests, never calls home.
	srv, err := tcpplane.Listen(tcpplane.ServerConfig{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go srv.Run(ctx)
	defer func() { cancel(); srv.Close() }()
	const id = 0xfeed
	arrived := make(chan struct{}, 1)
	srv.Register(runtime.TCPRoutingKey(testEndpoint, id), func(map[string]string, []byte) error {
		select {
		case arrived <- struct{}{}:
		default:
		}
		return nil
	})

	other, err := runtime.New(t.Context(), c.config(), runtime.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	rec, _ := json.Marshal(runtime.Instance{Namespace: "test", Component: "worker", Endpoint: "generate", ID: id,
		Transport: runtime.Transport{TCP: srv.Addr() + "/" + runtime.TCPRoutingKey(testEndpoint, id)}})
	key := runtime.InstanceKey(testEndpoint, id)
	if err := other.Store().Create(t.Context(), key, rec); err != nil {
		t.Fatal(err)
	}
	cl := client(t, caller, 1)

	result := make(chan error, 1)
	go func() {
		_, err := collect(runtime.NewContext(t.Context(), ""), cl, id, countRequest{N: 1}, nil)
		result <- err
	}()
	// The request reaches the worker, which acks it (the handler's nil)
	// and never calls home: it is pending.
	select {
	case <-arrived:
	case err := <-result:
		t.Fatalf("the call ended before its instance left: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the request never reached the worker")
	}
	removed := time.Now()
	if err := other.Store().Delete(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-result:
		if !errors.Is(err, runtime.ErrDisconnected) || !strings.Contains(err.Error(), runtime.MsgNotEstablished) {
			t.Fatalf("pending call = %v, want Disconnected: %s", err, runtime.MsgNotEstablished)
		}
		if d := time.Since(removed); d > 2*time.Second {
			t.Fatalf("pending call failed %s after the removal", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("pending call still waiting 10s after its instance left discovery")
	}
}

// Losing the lease (here: revoked behind the runtime's back, as an expiry
// during a long etcd outage would) does not stop the worker: it takes a
// new lease, registers again under the same instance id, and is called
// again; a stream that was running goes on.
func TestLeaseLostIsSurvived(t *testing.T) {
	c := newCluster(t, setup{runtime.DiscoveryEtcd, runtime.PlaneTCP})
	worker := c.start(t)
	serveDone := make(chan error, 1)
	go func() { serveDone <- worker.Endpoint(testEndpoint).Serve(context.Background(), newCounter()) }()
	caller := c.start(t)
	cl := client(t, caller, 1)
	id := worker.InstanceID()

	// A long stream runs across the loss.
	rc := runtime.NewContext(t.Context(), "")
	defer rc.Release()
	streamDone := make(chan error, 1)
	var got int
	go func() {
		n, err := collect(rc, cl, id, countRequest{N: 3000, DelayUS: 1000}, nil)
		got = len(n)
		streamDone <- err
	}()

	raw, err := clientv3.New(clientv3.Config{Endpoints: []string{c.etcd.URL}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Revoke(t.Context(), clientv3.LeaseID(id)); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 15*time.Second, "the instance to be registered again under a new lease", func() bool {
		resp, err := raw.Get(t.Context(), runtime.InstanceKey(testEndpoint, id))
		return err == nil && len(resp.Kvs) == 1 && resp.Kvs[0].Lease != int64(id)
	})
	testenv.WaitFor(t, 15*time.Second, "the caller to list the worker again", func() bool {
		ids := cl.InstanceIDs()
		return len(ids) == 1 && ids[0] == id
	})
	if err := <-streamDone; err != nil || got != 3000 {
		t.Fatalf("stream across the lease loss: %d items, %v; want 3000, nil", got, err)
	}
	if n, err := collect(runtime.NewContext(t.Context(), ""), cl, id, countRequest{N: 10}, nil); err != nil || len(n) != 10 {
		t.Fatalf("call after the new lease: %d items, %v", len(n), err)
	}
	select {
	case <-worker.Done():
		t.Fatalf("Done closed: %v", worker.Store().Err())
	case err := <-serveDone:
		t.Fatalf("Serve returned %v after the lease was lost", err)
	default:
	}
}

// NATS restarts under a running worker and caller: both reconnect and
// calls work again.
func TestNATSRestartIsSurvived(t *testing.T) {
	c := newCluster(t, setup{runtime.DiscoveryEtcd, runtime.PlaneNATS})
	worker, caller := c.start(t), c.start(t)
	serve(t, worker, newCounter())
	cl := client(t, caller, 1)
	call := func() error {
		got, err := collect(runtime.NewContext(t.Context(), ""), cl, worker.InstanceID(), countRequest{N: 50}, nil)
		if err == nil && len(got) != 50 {
			return errors.New("short stream")
		}
		return err
	}
	if err := call(); err != nil {
		t.Fatal(err)
	}
	c.nats.Stop()
	if err := call(); !errors.Is(err, runtime.ErrCannotConnect) {
		t.Fatalf("call with NATS down = %v, want CannotConnect", err)
	}
	if err := c.nats.Start(); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 20*time.Second, "calls to work after the NATS restart", func() bool { return call() == nil })
}

// etcd restarts under a running worker and caller: the lease survives, the
// instance stays discovered, calls work, and new registrations are seen.
func TestEtcdRestartIsSurvived(t *testing.T) {
	c := newCluster(t, setup{runtime.DiscoveryEtcd, runtime.PlaneTCP})
	worker, caller := c.start(t), c.start(t)
	serve(t, worker, newCounter())
	cl := client(t, caller, 1)

	c.etcd.Stop()
	time.Sleep(time.Second) // the outage under test: a second without etcd
	if err := c.etcd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-worker.Done():
		t.Fatal("the worker gave up its lease over a short etcd restart")
	default:
	}
	got, err := collect(runtime.NewContext(t.Context(), ""), cl, worker.InstanceID(), countRequest{N: 100}, nil)
	if err != nil {
		t.Fatalf("call after etcd restart: %v", err)
	}
	checkSequence(t, got, 100)
	second := c.start(t)
	serve(t, second, newCounter())
	testenv.WaitFor(t, 20*time.Second, "a worker started after the restart to be discovered", func() bool { return len(cl.InstanceIDs()) == 2 })
}
