package runtime_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// A process whose NATS comes up later than its lease's TTL, with etcd up
// the whole time, says once that it waits for NATS (where, until when,
// what to set) and once that NATS is reached, keeps its lease meanwhile,
// and starts with no etcd outage counted.
func TestLateNATSCostsNeitherTheLeaseNorAnOutage(t *testing.T) {
	t.Parallel()
	etcd := testenv.StartEtcd(t)
	nats := testenv.StartNATS(t)
	nats.Stop() // its port is kept for the start below
	cfg := baseConfig()
	cfg.Discovery, cfg.RequestPlane = runtime.DiscoveryEtcd, runtime.PlaneNATS
	cfg.EtcdEndpoints, cfg.NATSServer = []string{etcd.URL}, nats.URL
	cfg.LeaseTTL = 2 * time.Second
	var logs testenv.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))

	type result struct {
		rt  *runtime.DistributedRuntime
		err error
	}
	done := make(chan result, 1)
	go func() {
		rt, err := runtime.New(t.Context(), cfg, runtime.Deps{Logger: log})
		done <- result{rt, err}
	}()
	testenv.WaitFor(t, 10*time.Second, "the line that says it waits for NATS", func() bool {
		return strings.Contains(logs.String(), "waiting for nats")
	})
	// The scenario is NATS later than the lease's TTL: let two TTLs pass.
	late := time.NewTimer(2 * cfg.LeaseTTL)
	select {
	case r := <-done:
		t.Fatalf("New returned before NATS was up: %v", r.err)
	case <-late.C:
	}
	if err := nats.Start(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("New: %v", r.err)
	}
	rt := r.rt
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- rt.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-ran; err != nil {
			t.Errorf("Run: %v", err)
		}
	})

	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{etcd.URL}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ttl, err := cli.TimeToLive(t.Context(), clientv3.LeaseID(rt.InstanceID()))
	if err != nil || ttl.TTL <= 0 {
		t.Fatalf("the lease after the wait: TTL %v, err %v; want it alive", ttl, err)
	}
	out := logs.String()
	for _, want := range []string{"waiting for nats; retrying", "until=", "NATS_SERVER sets where", "nats reached"} {
		if strings.Count(out, want) != 1 {
			t.Errorf("want %q once in the log:\n%s", want, out)
		}
	}
	for _, unwanted := range []string{"etcd unreachable", "lease expired", "waiting for etcd"} {
		if strings.Contains(out, unwanted) {
			t.Errorf("%q in the log, with etcd up the whole time:\n%s", unwanted, out)
		}
	}
	if s := rt.DiscoveryStatus(); s.Outages != 0 || s.Status != runtime.DiscoveryConnected {
		t.Errorf("discovery status %+v: want connected, no outage", s)
	}
}
