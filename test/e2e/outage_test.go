package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// Lease TTL of every process of the outage test, in seconds: the outage
// lasts three of them.
const outageTTL = 2

// TestEtcdOutage stops etcd for three lease TTLs while 32 streams run
// (static stability): no stream fails or is cut, the frontend keeps
// answering new requests with the workers it knows, nothing exits. A
// worker killed during the outage is dropped after it; a worker started
// during it is routed to once etcd is back. etcd restarts from its data
// directory.
func TestEtcdOutage(t *testing.T) {
	c := newCluster(t, "etcd", "tcp")
	env := []string{fmt.Sprintf("ETCD_LEASE_TTL=%d", outageTTL)}
	mocker := append(slices.Clone(migrationMocker), "--speedup-ratio", "1")
	start := func(name string) *worker {
		return &worker{process: c.startMocker(name, mocker, env...)}
	}
	live := []*worker{start("mocker-a"), start("mocker-b")}
	doomed := start("mocker-doomed")
	f := c.startFrontend(env...)
	f.waitModels(t, "demo")
	for _, w := range append(slices.Clone(live), doomed) {
		w.waitServing(t, 20*time.Second)
	}
	waitInstances(t, f, append(slices.Clone(live), doomed))
	if d := discoveryStatus(t, f); d != "connected" {
		t.Fatalf("discovery %q before the outage, want connected", d)
	}

	// 32 streams long enough to outlast the outage (about 6 ms a token).
	const streams, maxTokens = 32, 2500
	type result struct {
		status int
		body   []byte
		err    error
	}
	results := make(chan result, streams)
	for i := range streams {
		go func() {
			b, _ := json.Marshal(streamRequest(chatPath, "Tell me a long story.", i, maxTokens))
			resp, err := f.http.Post(f.url+chatPath, "application/json", strings.NewReader(string(b)))
			if err != nil {
				results <- result{err: err}
				return
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			results <- result{resp.StatusCode, body, err}
		}()
	}
	f.waitFor(t, 20*time.Second, "the streams to run on the workers", func() bool {
		v, _ := f.scrape(t).value("dynamo_frontend_inflight_requests", `model="demo"`)
		return v >= streams
	})

	outage := time.Now()
	c.etcd.Stop()
	f.waitFor(t, 10*time.Second, "the frontend to report the outage", func() bool { return discoveryStatus(t, f) == "unreachable" })
	doomed.kill()
	late := start("mocker-late") // blocks until etcd is back
	// New requests keep being answered during the outage (one may meet the
	// killed worker first and move to another: the card allows it).
	for i := range 4 {
		if r := f.unary(t, chatPath, request(chatPath, "During the outage.", 100+i, 8)); r.finishReason() != "length" {
			t.Errorf("request %d during the outage: finish_reason %q, want length", i, r.finishReason())
		}
	}
	time.Sleep(time.Until(outage.Add(3 * outageTTL * time.Second)))
	if err := c.etcd.Start(); err != nil {
		t.Fatalf("etcd does not restart from its data directory: %v", err)
	}
	t.Logf("etcd was down for %v", time.Since(outage).Round(time.Millisecond))
	f.waitFor(t, 20*time.Second, "the frontend to report etcd back", func() bool { return discoveryStatus(t, f) == "connected" })

	late.waitServing(t, 30*time.Second)
	waitInstances(t, f, append(slices.Clone(live), late))
	for range streams {
		r := <-results
		if r.err != nil || r.status != http.StatusOK {
			t.Errorf("stream failed: status %d, %v: %s", r.status, r.err, r.body)
			continue
		}
		s := reassemble(t, chatPath, r.body)
		if s.finishReason != "length" || s.usage == nil || s.usage.CompletionTokens != maxTokens {
			t.Errorf("stream cut: finish_reason %q, usage %+v; want length after %d tokens", s.finishReason, s.usage, maxTokens)
		}
	}
	// The worker that came during the outage takes requests.
	before, _ := late.scrape(t).value("dynamo_component_requests_total", generateEndpoint)
	for i := range 6 {
		f.unary(t, chatPath, request(chatPath, "After the outage.", 200+i, 4))
	}
	if after, _ := late.scrape(t).value("dynamo_component_requests_total", generateEndpoint); after <= before {
		t.Errorf("the worker started during the outage served no request after it (%v -> %v)", before, after)
	}
	for _, p := range []*process{f.process, live[0].process, live[1].process} {
		if p.exited() {
			t.Errorf("%s exited: %v", p.name, p.err)
		}
	}
	m := f.scrape(t)
	if v, _ := m.value("dynamo_discovery_outages_total"); v < 1 {
		t.Errorf("dynamo_discovery_outages_total = %v, want at least 1", v)
	}
	if v, ok := m.value("dynamo_discovery_connected"); !ok || v != 1 {
		t.Errorf("dynamo_discovery_connected = %v (found %v), want 1", v, ok)
	}
}

// waitInstances waits until the frontend's /health lists exactly the
// workers' instances.
func waitInstances(t testing.TB, f *frontend, workers []*worker) {
	t.Helper()
	var want []uint64
	for _, w := range workers {
		want = append(want, w.id)
	}
	slices.Sort(want)
	f.waitFor(t, 30*time.Second, fmt.Sprintf("the frontend to route to exactly instances %x", want), func() bool {
		return slices.Equal(f.instanceIDs(t), want)
	})
}

// discoveryStatus is the frontend's link to etcd as /health reports it.
func discoveryStatus(t testing.TB, f *frontend) string {
	t.Helper()
	resp, body := f.get(t, "/health")
	var h struct {
		Discovery struct {
			Status string `json:"status"`
		} `json:"discovery"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &h) != nil {
		return ""
	}
	return h.Discovery.Status
}
