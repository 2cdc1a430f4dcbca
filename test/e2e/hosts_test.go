package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
)

// hostsTTL is the lease TTL of every process of TestAcrossHosts, in
// seconds.
const hostsTTL = 3

// TestAcrossHosts runs the stack on simulated machines (network
// namespaces, see netns_test.go): etcd and NATS on host "etcd", the
// frontend on "frontend", a mocker on each of "worker1" and "worker2",
// every process advertising its own host's address, requests on the TCP
// request plane. It cuts links as a network would, with the processes
// left running:
//
//   - a worker's link, with streams running on it: every stream ends with
//     the whole answer (those on the cut worker migrate), the frontend
//     drops the worker, and answers new requests;
//   - the etcd host's link, for three lease TTLs, under steady load: no
//     request fails, the frontend's /health reports the outage and its
//     end, both workers register again and take requests after it.
//
// It needs root; it skips otherwise.
func TestAcrossHosts(t *testing.T) {
	needNetns(t)
	r := newHostsRig(t)
	t.Run("worker link cut mid-stream", r.testWorkerCut)
	t.Run("etcd host cut off under load", r.testEtcdCut)
}

// hostsRig is the deployment of TestAcrossHosts.
type hostsRig struct {
	h       *hosts
	etcdURL string
	servers *process // etcd and NATS
	f       *frontend
	workers []*worker  // on worker1 and worker2
	procs   []*process // every process, for waitFor and fatalf
	baseEnv []string   // the environment of every process
	plane   []string   // discovery and request plane flags
}

func newHostsRig(t *testing.T) *hostsRig {
	start := time.Now()
	h := newHosts(t, "etcd", "frontend", "worker1", "worker2")
	r := &hostsRig{h: h}
	var natsURL string
	r.servers, r.etcdURL, natsURL = h.startServers(t, "etcd")
	r.baseEnv = []string{
		"ETCD_ENDPOINTS=" + r.etcdURL,
		"NATS_SERVER=" + natsURL,
		fmt.Sprintf("ETCD_LEASE_TTL=%d", hostsTTL),
		"DYN_GRACEFUL_SHUTDOWN_GRACE_PERIOD_SECS=0",
		"DYN_HTTP_GRACEFUL_SHUTDOWN_TIMEOUT_SECS=0",
	}
	// NATS is on the etcd host, which the second case cuts off: requests
	// go over the TCP request plane, from the frontend's host to the
	// worker's.
	r.plane = []string{"--discovery-backend", "etcd", "--request-plane", "tcp"}
	for _, host := range []string{"worker1", "worker2"} {
		args := append(append([]string{"--model-path", demoModel}, r.plane...),
			"--deterministic", "--speedup-ratio", "1", "--migration-limit", "3")
		w := &worker{process: h.start(t, host, "mocker@"+host, mockerBin, statusListening,
			append(r.env(host), "DYN_SYSTEM_PORT=0"), args...)}
		r.workers = append(r.workers, w)
	}
	fp := h.start(t, "frontend", "frontend@frontend", frontendBin, frontendListening, r.env("frontend"),
		append([]string{"--http-host", h.addr["frontend"], "--http-port", "0"}, r.plane...)...)
	r.f = newFrontend(t, fp)
	r.procs = append(processes(r.workers), r.servers, fp)
	r.f.waitModels(t, "demo")
	for _, w := range r.workers {
		w.waitServing(t, 20*time.Second)
	}
	waitInstances(t, r.f, r.workers)
	t.Logf("hosts %v up and serving in %v", h.addr, time.Since(start).Round(time.Millisecond))
	return r
}

// env is the environment of a process on host: it binds and advertises
// the host's address.
func (r *hostsRig) env(host string) []string {
	a := r.h.addr[host]
	return append(slices.Clone(r.baseEnv), "DYN_TCP_RPC_HOST="+a, "DYN_TCP_RESPONSE_STREAM_HOST="+a, "DYN_SYSTEM_HOST="+a)
}

// inflight returns each worker's requests in flight.
func (r *hostsRig) inflight(t testing.TB) map[*worker]int {
	t.Helper()
	out := map[*worker]int{}
	for _, w := range r.workers {
		v, _ := w.scrape(t).value("dynamo_component_inflight_requests", generateEndpoint)
		out[w] = int(v)
	}
	return out
}

// served returns how many requests each worker has taken.
func (r *hostsRig) served(t testing.TB) map[*worker]float64 {
	t.Helper()
	out := map[*worker]float64{}
	for _, w := range r.workers {
		out[w], _ = w.scrape(t).value("dynamo_component_requests_total", generateEndpoint)
	}
	return out
}

// testWorkerCut cuts worker1 off with streams running on both workers.
// worker1's lease expires and the frontend drops it. Its streams end when
// their connections' TCP keep-alive gives up, about 5 s after the cut (an
// established stream outlives its worker's removal from discovery, so
// that a draining worker finishes it), then move to worker2 and finish
// there, each the same answer it is when nothing fails. Requests sent to
// worker1 before it was dropped move to worker2 after the request plane's
// ack timeout.
func (r *hostsRig) testWorkerCut(t *testing.T) {
	const streams, maxTokens = 8, longAnswer
	w1, w2 := r.workers[0], r.workers[1]
	reqs := make([]func() object, streams)
	for i := range reqs {
		reqs[i] = func() object {
			return streamRequest(chatPath, fmt.Sprintf("Story %d, told across hosts.", i), 2000+i, maxTokens)
		}
	}
	want := r.f.references(t, chatPath, reqs)
	before := r.f.migrations(t)
	mark := len(r.f.log.String())

	live := make([]*liveStream, streams)
	for i, req := range reqs {
		live[i] = r.f.startStream(t, chatPath, req())
	}
	for _, s := range live {
		s.waitContent(t, 20)
	}
	busy := r.inflight(t)
	if busy[w1] == 0 || busy[w2] == 0 {
		fatalf(t, r.procs, "streams in flight %d on worker1, %d on worker2; want some on each", busy[w1], busy[w2])
	}
	cut := time.Now()
	r.h.cut(t, "worker1")
	t.Logf("worker1 cut off with %d streams on it, %d on worker2", busy[w1], busy[w2])

	dropped := r.watchDrop(t.Context(), w2.id, cut)
	// Requests that arrive before the frontend knows: the round robin
	// sends some to worker1, which does not answer.
	var early []<-chan asyncResult
	for i := range 4 {
		early = append(early, r.f.postAsync(t, chatPath, request(chatPath, "Right after the cut.", 2500+i, 8)))
	}
	for i, s := range live {
		sameAnswer(t, fmt.Sprintf("stream %d", i), reassemble(t, chatPath, s.finish(t, 30*time.Second)), want[i], maxTokens)
	}
	t.Logf("every stream complete %v after the cut", time.Since(cut).Round(time.Millisecond))
	for i, res := range early {
		got := <-res
		var u response
		if got.err != nil || got.status != http.StatusOK || json.Unmarshal(got.body, &u) != nil || u.finishReason() != "length" || u.Usage == nil || u.Usage.CompletionTokens != 8 {
			t.Errorf("request %d sent right after the cut: status %d, err %v, body %s; want an answer of 8 tokens", i, got.status, got.err, got.body)
		} else {
			t.Logf("request %d sent right after the cut answered %v after the cut", i, got.at.Sub(cut).Round(time.Millisecond))
		}
	}
	for _, line := range strings.Split(r.f.log.String()[mark:], "\n") {
		if _, msg, ok := strings.Cut(line, "msg="); ok && strings.Contains(msg, "migration: ") {
			t.Logf("frontend: %s", msg)
		}
	}
	waitInstances(t, r.f, []*worker{w2})
	t.Logf("the frontend dropped worker1 %v after the cut (lease TTL %ds)", (<-dropped).Round(time.Millisecond), hostsTTL)

	after := r.f.migrations(t)
	if d := after.ongoing - before.ongoing; d != float64(busy[w1]) {
		t.Errorf("%v mid-stream migrations, want %d (the streams on worker1, each once)", d, busy[w1])
	}
	if d := after.cannot - before.cannot; d != 0 {
		t.Errorf("%d new \"Cannot recreate stream\" log lines, want 0", d)
	}
	for i := range 4 {
		if u := r.f.unary(t, chatPath, request(chatPath, "After the cut.", 3000+i, 8)); u.finishReason() != "length" || u.Usage == nil || u.Usage.CompletionTokens != 8 {
			t.Errorf("request %d after the cut: finish_reason %q, usage %+v; want length after 8 tokens", i, u.finishReason(), u.Usage)
		}
	}
	if w1.exited() {
		t.Errorf("worker1 exited while cut off: %v", w1.err)
	}
}

// watchDrop polls the frontend's /health from its own goroutine until it
// lists exactly the instance id, and sends how long after since that was
// (zero if ctx ended first).
func (r *hostsRig) watchDrop(ctx context.Context, id uint64, since time.Time) <-chan time.Duration {
	out := make(chan time.Duration, 1)
	go func() {
		for ctx.Err() == nil {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.f.url+"/health", nil)
			if err != nil {
				break
			}
			resp, err := r.f.http.Do(req)
			if err == nil {
				var h struct {
					Instances []struct {
						ID uint64 `json:"instance_id"`
					} `json:"instances"`
				}
				err = json.NewDecoder(resp.Body).Decode(&h)
				resp.Body.Close()
				if err == nil && len(h.Instances) == 1 && h.Instances[0].ID == id {
					out <- time.Since(since)
					return
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		out <- 0
	}()
	return out
}

// testEtcdCut brings worker1 back, then cuts the etcd host off for three
// lease TTLs while clients keep sending requests.
func (r *hostsRig) testEtcdCut(t *testing.T) {
	r.h.restore(t, "worker1")
	back := time.Now()
	waitInstances(t, r.f, r.workers)
	t.Logf("worker1 registered again %v after its link returned", time.Since(back).Round(time.Millisecond))
	if d := discoveryStatus(t, r.f); d != "connected" {
		t.Fatalf("discovery %q before the outage, want connected", d)
	}

	load := r.startLoad(t, 4)
	waitFor(t, 10*time.Second, "the load to run", func() bool { return load.ok.Load() >= 8 }, r.procs...)

	outage := time.Now()
	r.h.cut(t, "etcd")
	var statuses []string // /health's discovery status, every 100 ms
	for time.Since(outage) < 3*hostsTTL*time.Second {
		if s := discoveryStatus(t, r.f); len(statuses) == 0 || statuses[len(statuses)-1] != s {
			statuses = append(statuses, s)
			t.Logf("%v into the outage: discovery %q", time.Since(outage).Round(time.Millisecond), s)
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.h.restore(t, "etcd")
	restored := time.Now()
	t.Logf("etcd host cut off for %v; %d requests answered meanwhile", restored.Sub(outage).Round(time.Millisecond), load.ok.Load())
	if !slices.Contains(statuses, "unreachable") {
		t.Errorf("/health's discovery status during the outage went %q, never \"unreachable\"", statuses)
	}
	waitFor(t, 30*time.Second, "the frontend to report etcd back", func() bool { return discoveryStatus(t, r.f) == "connected" }, r.procs...)
	connected := time.Now()
	t.Logf("discovery connected again %v after the link returned", connected.Sub(restored).Round(time.Millisecond))
	// The frontend lists both workers at once: it holds back the
	// deletions of keys whose lease expired during the outage. That the
	// workers wrote their keys again shows in etcd, and in /health once
	// the hold is over.
	r.waitKeys(t)
	t.Logf("both workers' instance keys in etcd again %v after the link returned", time.Since(restored).Round(time.Millisecond))
	served := r.served(t)
	waitFor(t, 20*time.Second, "both workers to serve requests after the outage", func() bool {
		now := r.served(t)
		return now[r.workers[0]] > served[r.workers[0]] && now[r.workers[1]] > served[r.workers[1]]
	}, r.procs...)
	time.Sleep(time.Until(connected.Add(holdBack + time.Second)))
	if got, want := r.f.instanceIDs(t), []uint64{r.workers[0].id, r.workers[1].id}; !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("%v after the outage /health lists instances %x, want %x", time.Since(connected).Round(time.Millisecond), got, want)
	}
	ok, failed := load.stop()
	t.Logf("%d requests answered under load, %d failed", ok, len(failed))
	if len(failed) > 0 {
		t.Errorf("%d requests failed; want none. The first ones:\n%s", len(failed), strings.Join(failed[:min(len(failed), 5)], "\n"))
	}
	for _, p := range r.procs {
		if p.exited() {
			t.Errorf("%s exited: %v%s", p.name, p.err, p.lastLines())
		}
	}
}

// holdBack is how long after etcd returns the frontend holds back the
// deletion of a key that vanished during the outage: the lease TTL, at
// least 5 s (pkg/runtime/discovery, Etcd.Watch).
const holdBack = max(hostsTTL*time.Second, 5*time.Second)

// waitKeys reads etcd, through the frontend's host, until both workers'
// instance keys are there.
func (r *hostsRig) waitKeys(t testing.TB) {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{r.etcdURL},
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return r.h.dial(ctx, "frontend", "tcp", addr)
		})},
	})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	defer cli.Close()
	var keys []string
	var getErr error
	defer func() {
		if t.Failed() {
			t.Logf("etcd keys %q, last error %v", keys, getErr)
		}
	}()
	waitFor(t, 30*time.Second, "both workers' instance keys in etcd", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		resp, err := cli.Get(ctx, "v1/instances/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if getErr = err; err != nil {
			return false
		}
		keys = keys[:0]
		ids := map[uint64]bool{}
		for _, kv := range resp.Kvs {
			keys = append(keys, string(kv.Key))
			if id, err := strconv.ParseUint(path.Base(string(kv.Key)), 16, 64); err == nil {
				ids[id] = true
			}
		}
		return ids[r.workers[0].id] && ids[r.workers[1].id]
	}, r.procs...)
}

// load is clients sending requests in a loop, each checked.
type load struct {
	ok     atomic.Int64
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	failed []string
}

// startLoad starts n clients; each alternates short unary and streaming
// chat requests until stop.
func (r *hostsRig) startLoad(t testing.TB, n int) *load {
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{cancel: cancel}
	t.Cleanup(func() { l.stop() })
	for c := range n {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				stream := i%2 == 1
				maxTokens := 8 + 8*c
				err := r.oneRequest(ctx, stream, c*100000+i, maxTokens)
				switch {
				case ctx.Err() != nil:
				case err != nil:
					l.mu.Lock()
					l.failed = append(l.failed, fmt.Sprintf("%s client %d request %d (stream %v): %v", time.Now().Format("15:04:05.000"), c, i, stream, err))
					l.mu.Unlock()
				default:
					l.ok.Add(1)
				}
			}
		}()
	}
	return l
}

// stop ends the load and returns how many requests were answered and the
// failures.
func (l *load) stop() (int64, []string) {
	l.cancel()
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ok.Load(), slices.Clone(l.failed)
}

// oneRequest sends one chat request and checks its answer: status 200,
// finish_reason length after maxTokens tokens.
func (r *hostsRig) oneRequest(ctx context.Context, stream bool, seed, maxTokens int) error {
	req := request(chatPath, "Keep going.", seed, maxTokens)
	if stream {
		req = streamRequest(chatPath, "Keep going.", seed, maxTokens)
	}
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, r.f.url+chatPath, bytes.NewReader(b))
	if err != nil {
		return err
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err := r.f.http.Do(hr)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %s", resp.StatusCode, body)
	}
	var finish string
	var u *usage
	if stream {
		s, err := parseStream(body)
		if err != nil {
			return err
		}
		finish, u = s.finishReason, s.usage
	} else {
		var c response
		if err := json.Unmarshal(body, &c); err != nil {
			return fmt.Errorf("%v in %s", err, body)
		}
		finish, u = c.finishReason(), c.Usage
	}
	if finish != "length" || u == nil || u.CompletionTokens != maxTokens {
		return fmt.Errorf("finish_reason %q, usage %+v; want length after %d tokens: %s", finish, u, maxTokens, body)
	}
	return nil
}

// parseStream is reassemble for a goroutine that cannot fail the test: it
// returns what is wrong with the stream instead.
func parseStream(body []byte) (streamed, error) {
	var s streamed
	events := bytes.Split(bytes.TrimSpace(body), []byte("\n\n"))
	if len(events) == 0 || string(events[len(events)-1]) != "data: [DONE]" {
		return s, fmt.Errorf("the stream does not end with data: [DONE]: %s", body)
	}
	for _, ev := range events[:len(events)-1] {
		data, ok := bytes.CutPrefix(ev, []byte("data: "))
		if !ok {
			return s, fmt.Errorf("unexpected event %q", ev)
		}
		var c response
		if err := json.Unmarshal(data, &c); err != nil {
			return s, fmt.Errorf("chunk %q: %v", data, err)
		}
		if c.Usage != nil {
			s.usage = c.Usage
		}
		for _, ch := range c.Choices {
			s.text += ch.Delta.Content
			if ch.FinishReason != nil {
				s.finishReason = *ch.FinishReason
			}
		}
	}
	return s, nil
}
