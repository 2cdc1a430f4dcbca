package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/testenv"
)

// The start-order tests start a worker before what it needs (etcd, NATS,
// its engine) and the rest afterwards, on the addresses the test kept
// for them: the worker says once that it waits for each, where, until
// when and what to set, once that each is reached, counts no discovery
// outage, and serves once all are up.

// lateBy is how long the tests leave a worker waiting: longer than the
// lease TTL they set (ETCD_LEASE_TTL=2), so that a wait that cost the
// lease or counted as an etcd outage would show.
const lateBy = 3 * time.Second

// waitLate lets the scenario's time pass: the dependency comes up lateBy
// after the worker started waiting for it. Nothing is polled here: the
// passing of time is the scenario; the worker must not exit meanwhile.
func waitLate(t testing.TB, procs ...*process) {
	t.Helper()
	deadline := time.Now().Add(lateBy)
	waitFor(t, lateBy+time.Second, "the dependency's late start", func() bool { return time.Now().After(deadline) }, procs...)
}

// checkOnce fails the test unless each of want occurs exactly once in
// the process's log, and none of unwanted does.
func checkOnce(t testing.TB, p *process, want, unwanted []string) {
	t.Helper()
	out := p.log.String()
	for _, w := range want {
		if n := strings.Count(out, w); n != 1 {
			t.Errorf("%s logged %q %d times, want once", p.name, w, n)
		}
	}
	for _, u := range unwanted {
		if strings.Contains(out, u) {
			t.Errorf("%s logged %q", p.name, u)
		}
	}
}

// discoveryOutages is the process's /health discovery.outages.
func discoveryOutages(t testing.TB, p *process) uint64 {
	t.Helper()
	resp, err := p.http.Get("http://" + p.address(t) + "/health")
	if err != nil {
		p.fatalf(t, "GET /health: %v", err)
	}
	defer resp.Body.Close()
	var h struct {
		Discovery struct {
			Status  string `json:"status"`
			Outages uint64 `json:"outages"`
		} `json:"discovery"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		p.fatalf(t, "GET /health: %v", err)
	}
	if h.Discovery.Status != "connected" {
		t.Errorf("%s /health discovery status %q, want connected", p.name, h.Discovery.Status)
	}
	return h.Discovery.Outages
}

// What a worker must not log after a late start: an outage that never was.
var falseOutage = []string{"etcd unreachable", "lease expired", "found the lease gone"}

// waitingFor are the lines with which a worker says that it waits for
// etcd, NATS and its engine, and that each is reached.
var (
	waitingForEtcd   = regexp.MustCompile(`msg="discovery: waiting for etcd; retrying".* until=\S+ .*advice="ETCD_ENDPOINTS sets where`)
	waitingForNATS   = regexp.MustCompile(`msg="runtime: waiting for nats; retrying".* until=\S+ advice="NATS_SERVER sets where`)
	waitingForEngine = regexp.MustCompile(`msg="bridge: waiting for the engine; retrying".* url=(\S+) .*until=\S+ advice="--engine-url \(DYN_WORKER_ENGINE_URL\) sets where`)
)

// A mocker started before etcd waits for it and serves once it is up.
func TestStartEtcdLate(t *testing.T) {
	c := newCluster(t, "etcd", "tcp")
	c.etcd.Stop() // its address (a unix socket) is kept for the start below
	w := &worker{process: c.startMocker("mocker", deterministic, "ETCD_LEASE_TTL=2")}
	w.waitLine(t, 30*time.Second, "the line that says it waits for etcd", waitingForEtcd)
	waitLate(t, w.process)
	if err := c.etcd.Start(); err != nil {
		t.Fatal(err)
	}
	w.waitServing(t, 30*time.Second)
	f := c.startFrontend()
	f.waitModels(t, "demo") // a chat request answered through the worker
	checkOnce(t, w.process, []string{"discovery: waiting for etcd", "discovery: etcd reached"}, falseOutage)
	if n := discoveryOutages(t, w.process); n != 0 {
		t.Errorf("the mocker counts %d discovery outages, want 0", n)
	}
}

// A mocker on the NATS request plane started before both etcd and NATS
// waits for both at the same time (one line each) and serves once both
// are up, NATS later than etcd by more than the lease's TTL.
func TestStartAllLate(t *testing.T) {
	c := newCluster(t, "etcd", "nats")
	c.etcd.Stop() // both keep their addresses for the starts below
	c.nats.Stop()
	w := &worker{process: c.startMocker("mocker", deterministic, "ETCD_LEASE_TTL=2")}
	w.waitLine(t, 30*time.Second, "the line that says it waits for etcd", waitingForEtcd)
	w.waitLine(t, 30*time.Second, "the line that says it waits for NATS", waitingForNATS)
	waitLate(t, w.process)
	if err := c.etcd.Start(); err != nil {
		t.Fatal(err)
	}
	w.waitLine(t, 30*time.Second, "etcd reached", regexp.MustCompile(`discovery: etcd reached`))
	waitLate(t, w.process)
	if err := c.nats.Start(); err != nil {
		t.Fatal(err)
	}
	w.waitServing(t, 30*time.Second)
	f := c.startFrontend()
	f.waitModels(t, "demo")
	checkOnce(t, w.process, []string{"discovery: waiting for etcd", "runtime: waiting for nats", "discovery: etcd reached", "runtime: nats reached"}, falseOutage)
	if n := discoveryOutages(t, w.process); n != 0 {
		t.Errorf("the mocker counts %d discovery outages, want 0", n)
	}
}

// cmd/worker started before its engine (llama-server) and etcd: it
// waits for both at the same time, one line each, and serves once both
// are up; the engine's /health is polled meanwhile.
func TestStartEngineLate(t *testing.T) {
	bin := testenv.NeedLlamaServer(t)
	c := newCluster(t, "etcd", "tcp")
	c.etcd.Stop()
	// The worker must be given the engine's address before the engine
	// exists, so the test picks the port: llama-server cannot report a
	// port 0 to a worker already running. Another process could take it
	// first; the engine's start would then fail and say so.
	port := testenv.FreePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	args := append([]string{"--engine", "llamacpp", "--engine-url", url, "--engine-start-timeout", "60s", "--model-path", demoModel}, c.args...)
	env := append(slices.Clone(c.env), "DYN_SYSTEM_PORT=0", "ETCD_LEASE_TTL=2")
	w := &worker{process: startProcess(t, "worker", workerBin, statusListening, env, args...)}
	m := w.waitLine(t, 30*time.Second, "the line that says it waits for the engine", waitingForEngine)
	if m[1] != url {
		t.Errorf("the waiting line names %s, want %s", m[1], url)
	}
	w.waitLine(t, 30*time.Second, "the line that says it waits for etcd", waitingForEtcd)
	waitLate(t, w.process)
	if err := c.etcd.Start(); err != nil {
		t.Fatal(err)
	}
	waitLate(t, w.process)
	testenv.StartLlamaServer(t, bin, testenv.LlamaOptions{Model: demoGGUF(t), Port: port, Args: llamaArgs})
	w.waitServing(t, 60*time.Second)
	f := c.startFrontend()
	f.waitModels(t, "demo")
	checkOnce(t, w.process, []string{"bridge: waiting for the engine", "bridge: engine reached", "discovery: waiting for etcd", "discovery: etcd reached"}, falseOutage)
	if n := discoveryOutages(t, w.process); n != 0 {
		t.Errorf("the worker counts %d discovery outages, want 0", n)
	}
	if code, _ := w.health(t); code != http.StatusOK {
		t.Errorf("the worker's /health: %d, want 200", code)
	}
}
