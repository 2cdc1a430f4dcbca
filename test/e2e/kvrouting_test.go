package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestKVRouting checks KV-aware routing (frontend --router-mode kv) as a
// user sees it: requests that share a cached prompt prefix go to the
// worker holding it, and that worker's answer reports the prefix as
// cached (usage.prompt_tokens_details.cached_tokens). It runs three
// mocker processes on the NATS request plane, where they publish KV
// events, with etcd discovery.
//
// Which worker served a request is read from the workers themselves:
// the test sends one request at a time, and exactly one worker's
// dynamo_component_requests_total moves.
func TestKVRouting(t *testing.T) {
	r := newKVRig(t, "etcd", "nats")
	t.Run("prefix-sharing requests follow the worker that cached the prefix", r.testFollowPrefix)
	t.Run("unrelated prompts spread over the workers", r.testSpread)
	t.Run("concurrent answers spread by load", r.testSpreadByLoad)
	t.Run("busy thresholds set at run time steer requests", r.testBusyThreshold)
	t.Run("a restarted frontend loads the workers' indexes", r.testRestart)
	t.Run("two frontends with replica sync share the load", r.testReplicaSync)
	t.Run("approximate mode without KV events", r.testApproximate)
	// Last: it leaves two workers.
	t.Run("a SIGKILLed worker is dropped", r.testKill)
}

// TestKVRoutingTCP checks the visible fallback on the TCP request plane:
// without NATS no KV events can be heard, so the frontend says it routes
// in approximate mode, and prefix-sharing requests still follow the
// worker the first one went to.
func TestKVRoutingTCP(t *testing.T) {
	r := newKVRig(t, "file", "tcp")
	h := r.f.health(t)
	if mode := h.KVRouting["demo"]; !strings.HasPrefix(mode, "approximate") || !strings.Contains(mode, "NATS") {
		t.Errorf(`/health kv_routing["demo"] = %q, want approximate, naming NATS as the cause`, mode)
	}
	if v, ok := r.f.scrape(t).value("dynamo_frontend_kv_router_mode", `model="demo"`, `mode="approximate"`); !ok || v != 1 {
		t.Errorf(`dynamo_frontend_kv_router_mode{mode="approximate"} = %v (found %v), want 1`, v, ok)
	}
	if !strings.Contains(r.f.log.String(), "falling back to approximate mode") {
		t.Error("the frontend did not log its fallback to approximate mode")
	}
	r.followPrefix(t, r.f, "tcp")
}

// Mocker settings for KV routing. Speedup 10: a 1,000-token prefill
// takes about 3 ms and a token about 0.6 ms, so prefix hits are real
// work saved and the tests stay fast.
var kvMocker = []string{"--speedup-ratio", "10", "--block-size", fmt.Sprint(kvBlockSize)}

const (
	kvBlockSize  = 64
	prefixWords  = 600 // about 1,700 tokens of the demo model: 26 full blocks
	suffixWords  = 40
	followers    = 6 // prefix-sharing requests after the first
	kvMaxTokens  = 2
	longTokens   = 3000               // about 2 s at speedup 10: still streaming while the next answers start
	kvLeaseTTL   = "ETCD_LEASE_TTL=2" // a killed worker leaves discovery within about two seconds
	kvInstanceTO = 20 * time.Second
)

// kvRig is one deployment: three mockers and a KV-routing frontend.
type kvRig struct {
	c       *cluster
	workers []*worker
	f       *frontend

	// Set by testFollowPrefix: its prefix and the worker holding it.
	prefix string
	holder *worker
}

func newKVRig(t *testing.T, discovery, plane string) *kvRig {
	r := &kvRig{c: newCluster(t, discovery, plane)}
	for i := range 3 {
		r.workers = append(r.workers, &worker{
			process: r.c.startMocker(fmt.Sprintf("mocker-%d", i+1), kvMocker, kvLeaseTTL),
		})
	}
	r.f = r.startFrontend(t)
	return r
}

// startFrontend starts a KV-routing frontend (extra flags added) and
// waits until it routes to every live worker. Its migration limit lets a
// request that found its worker dead be sent again (testKill); a request
// that finds every worker busy waits a second in the admission queue
// before it is refused (testBusyThreshold).
func (r *kvRig) startFrontend(t testing.TB, extra ...string) *frontend {
	t.Helper()
	f := r.c.startFrontendArgs(append([]string{"--router-mode", "kv", "--migration-limit", "1", "--router-queue-timeout", "1"}, extra...))
	f.waitModels(t, "demo")
	r.waitInstances(t, f)
	return f
}

// waitInstances waits until every live worker serves and f's /health
// lists exactly their instances.
func (r *kvRig) waitInstances(t testing.TB, f *frontend) {
	t.Helper()
	var want []uint64
	for _, w := range r.workers {
		w.waitServing(t, kvInstanceTO)
		want = append(want, w.id)
	}
	slices.Sort(want)
	f.waitFor(t, kvInstanceTO, fmt.Sprintf("/health to list exactly instances %x", want), func() bool {
		return slices.Equal(f.instanceIDs(t), want)
	})
}

// served returns each worker's count of generate requests.
func (r *kvRig) served(t testing.TB) map[*worker]float64 {
	t.Helper()
	out := map[*worker]float64{}
	for _, w := range r.workers {
		v, ok := w.scrape(t).value("dynamo_component_requests_total", generateEndpoint)
		if !ok {
			w.fatalf(t, "%s: no dynamo_component_requests_total for the generate endpoint", w.name)
		}
		out[w] = v
	}
	return out
}

// kvAnswer is what the test reads from a completion: its usage and the
// worker that served it.
type kvAnswer struct {
	prompt, cached int
	worker         *worker
}

// complete sends one unary completion through f and finds the worker
// that served it: the only one whose request counter moved.
func (r *kvRig) complete(t testing.TB, f *frontend, prompt string) kvAnswer {
	t.Helper()
	before := r.served(t)
	resp, body := f.post(t, complPath, object{"model": "demo", "prompt": prompt, "max_tokens": kvMaxTokens,
		"nvext": object{"extra_fields": []string{"worker_id"}}})
	if resp.StatusCode != http.StatusOK {
		f.fatalf(t, "completion: status %d, body %s", resp.StatusCode, body)
	}
	var c struct {
		Usage *struct {
			PromptTokens        int `json:"prompt_tokens"`
			PromptTokensDetails *struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
		NvExt struct {
			WorkerID *struct {
				DecodeWorkerID uint64 `json:"decode_worker_id"`
			} `json:"worker_id"`
		} `json:"nvext"`
	}
	if err := json.Unmarshal(body, &c); err != nil || c.Usage == nil || c.Usage.PromptTokensDetails == nil {
		t.Fatalf("completion: no usage.prompt_tokens_details (err %v) in %s", err, body)
	}
	a := kvAnswer{prompt: c.Usage.PromptTokens, cached: c.Usage.PromptTokensDetails.CachedTokens}
	after := r.served(t)
	for w, n := range after {
		switch d := n - before[w]; {
		case d == 1 && a.worker == nil:
			a.worker = w
		case d != 0:
			t.Fatalf("completion: %s's request count moved by %v (another worker moved too: %v)", w.name, d, a.worker != nil)
		}
	}
	if a.worker == nil {
		t.Fatal("completion: no worker's request count moved")
	}
	// The frontend names the worker when asked (nvext.extra_fields).
	if c.NvExt.WorkerID == nil {
		t.Errorf("completion: no nvext.worker_id in %s", body)
	} else if id := c.NvExt.WorkerID.DecodeWorkerID; id != a.worker.id {
		t.Errorf("completion: nvext.worker_id.decode_worker_id %x, but %s (%x) served it", id, a.worker.name, a.worker.id)
	}
	return a
}

// words returns n words drawn from a small vocabulary by a source
// seeded with seed: the same seed gives the same text.
func words(seed string, n int) string {
	vocab := strings.Fields("the of and to in is for that with on as was at by it from be this are or an have not but " +
		"time people year way day man thing woman life child world school state family group country problem hand part " +
		"place case week company system program question work number night point home water room mother area money story")
	var h uint64
	for _, c := range seed {
		h = h*31 + uint64(c)
	}
	rng := rand.New(rand.NewPCG(h, 7))
	out := make([]string, n)
	for i := range out {
		out[i] = vocab[rng.IntN(len(vocab))]
	}
	return strings.Join(out, " ")
}

// followPrefix sends a long prompt through f, then prefix-sharing
// prompts with different suffixes one at a time, and checks that each
// goes to the first one's worker and is answered from its cache. It
// returns the prefix and that worker.
func (r *kvRig) followPrefix(t testing.TB, f *frontend, seed string) (string, *worker) {
	t.Helper()
	prefix := words("prefix "+seed, prefixWords)
	first := r.complete(t, f, prefix)
	if first.cached != 0 {
		t.Errorf("first request with a fresh prefix: cached_tokens %d, want 0", first.cached)
	}
	// The demo tokenizer is byte-level BPE with a GPT-2 pre-tokenizer: a
	// space starts a new pre-token, so prefix + " " + suffix begins with
	// exactly the tokens of prefix.
	wantCached := first.prompt / kvBlockSize * kvBlockSize
	if wantCached < 8*kvBlockSize {
		t.Fatalf("prefix is %d tokens, want at least 8 blocks of %d", first.prompt, kvBlockSize)
	}
	t.Logf("prefix: %d tokens, %d full blocks, served by %s", first.prompt, wantCached/kvBlockSize, first.worker.name)
	for i := range followers {
		a := r.complete(t, f, prefix+" "+words(fmt.Sprintf("suffix %s %d", seed, i), suffixWords))
		if a.worker != first.worker {
			t.Errorf("prefix-sharing request %d went to %s, want %s, which holds the prefix", i, a.worker.name, first.worker.name)
		}
		if a.cached < wantCached {
			t.Errorf("prefix-sharing request %d (%d prompt tokens): cached_tokens %d, want at least %d (the prefix's full blocks)",
				i, a.prompt, a.cached, wantCached)
		}
	}
	return prefix, first.worker
}

func (r *kvRig) testFollowPrefix(t *testing.T) {
	r.prefix, r.holder = r.followPrefix(t, r.f, "events")
	m := r.f.scrape(t)
	if v, ok := m.value("dynamo_frontend_kv_router_mode", `model="demo"`, `mode="events"`); !ok || v != 1 {
		t.Errorf(`dynamo_frontend_kv_router_mode{mode="events"} = %v (found %v), want 1`, v, ok)
	}
	if v, _ := m.value("dynamo_kvrouter_kv_cache_events_applied", `event_type="stored"`, `status="ok"`); v == 0 {
		t.Error(`dynamo_kvrouter_kv_cache_events_applied{event_type="stored",status="ok"} is 0: the frontend heard no KV events`)
	}
	if mode := r.f.health(t).KVRouting["demo"]; mode != "events" {
		t.Errorf(`/health kv_routing["demo"] = %q, want events`, mode)
	}
}

// testSpread sends unrelated prompts one at a time. No worker holds
// any of them and none is loaded, so every worker costs the same and the
// router picks at random: eight prompts do not all land on one worker
// (one chance in 2,187 if they did by luck).
func (r *kvRig) testSpread(t *testing.T) {
	count := map[*worker]int{}
	for i := range 8 {
		a := r.complete(t, r.f, words(fmt.Sprintf("unrelated %d", i), 200))
		if a.cached >= kvBlockSize {
			t.Errorf("unrelated prompt %d: cached_tokens %d, want less than one block", i, a.cached)
		}
		count[a.worker]++
	}
	t.Logf("unrelated prompts per worker: %s", names(count))
	if len(count) < 2 {
		t.Errorf("eight unrelated prompts all went to one worker: %s", names(count))
	}
}

// testSpreadByLoad starts six long answers to unrelated prompts, one
// after the other, each once the previous one streams: with no cached
// prefix to prefer, the router weighs the load of the answers in
// progress, and every worker gets two.
func (r *kvRig) testSpreadByLoad(t *testing.T) {
	var long []*longStream
	defer r.stopLong(t, &long)
	count := map[*worker]int{}
	var order []string
	for i := range 6 {
		a := r.startLong(t, r.f, fmt.Sprintf("spread %d", i))
		long = append(long, a)
		count[a.worker]++
		order = append(order, a.worker.name)
	}
	r.checkStreaming(t, long)
	for _, w := range r.workers {
		if count[w] != 2 {
			t.Errorf("six concurrent answers per worker: %s (in order: %v), want two each", names(count), order)
			break
		}
	}
}

// testBusyThreshold changes the decode-blocks busy threshold through
// POST /busy_threshold while the worker holding a prefix streams a long
// answer to a prompt that shares it. At 0 every worker with blocks in use
// is busy: a prefix-sharing request goes elsewhere, and once every worker
// streams, requests are refused as overloaded. At 1 no worker is busy and
// the prefix's worker gets its requests again. (Its own prefix: the
// request sent elsewhere caches it on a second worker.)
func (r *kvRig) testBusyThreshold(t *testing.T) {
	setThreshold := func(v float64) {
		t.Helper()
		resp, body := r.f.post(t, "/busy_threshold", object{"model": "demo", "active_decode_blocks_threshold": v})
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), fmt.Sprintf(`"active_decode_blocks_threshold":%v`, v)) {
			r.f.fatalf(t, "POST /busy_threshold %v: %d %s", v, resp.StatusCode, body)
		}
	}
	var long []*longStream
	defer func() {
		setThreshold(1)
		r.stopLong(t, &long)
	}()
	prefix := words("busy prefix", prefixWords)
	holder := r.complete(t, r.f, prefix).worker
	// The prompt's 1,700 tokens leave room for 2,000 more in the demo
	// model's context: over a second of streaming at speedup 10.
	l := r.startLongPrompt(t, r.f, prefix+" "+words("busy long", suffixWords), 2000)
	long = append(long, l)
	if l.worker != holder {
		t.Fatalf("a prefix-sharing answer went to %s, want %s (holds the prefix)", l.worker.name, holder.name)
	}

	setThreshold(0)
	// The holder's load report follows its first token within
	// milliseconds; retry briefly rather than race it.
	var a kvAnswer
	for range 20 {
		if a = r.complete(t, r.f, prefix+" "+words("busy elsewhere", suffixWords)); a.worker != holder {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if a.worker == holder {
		t.Errorf("threshold 0: a prefix-sharing request still went to the busy holder %s", holder.name)
	}
	time.Sleep(200 * time.Millisecond) // its worker reports its blocks free again
	for i := range 2 {
		l := r.startLong(t, r.f, fmt.Sprintf("busy fill %d", i))
		long = append(long, l)
	}
	r.checkStreaming(t, long)
	var status int
	var body []byte
	// With every worker busy the request waits in the admission queue
	// (--router-queue-timeout 1 in this rig) and is then refused.
	r.f.waitFor(t, 10*time.Second, "a request to be refused with every worker busy", func() bool {
		var resp *http.Response
		resp, body = r.f.post(t, complPath, object{"model": "demo", "prompt": words("busy refused", 50), "max_tokens": 1})
		status = resp.StatusCode
		return status != http.StatusOK
	})
	if status != http.StatusServiceUnavailable || !strings.Contains(string(body), "busy") || !strings.Contains(string(body), "in the queue") {
		t.Errorf("every worker busy: %d %s, want 503 saying the request waited out the queue", status, body)
	}

	setThreshold(1)
	if a := r.complete(t, r.f, prefix+" "+words("busy back", suffixWords)); a.worker != holder {
		t.Errorf("threshold 1: a prefix-sharing request went to %s, want %s again", a.worker.name, holder.name)
	}
}

// testReplicaSync runs two frontends with --router-replica-sync and
// starts long answers to unrelated prompts alternately through them:
// first, second, first. Each frontend knows the load the other one
// routed, so the three answers run on three different workers. Without
// the sync the second frontend would see every worker idle and pick the
// first one's worker a third of the time; three rounds make a lucky pass
// unlikely.
func (r *kvRig) testReplicaSync(t *testing.T) {
	a := r.startFrontend(t, "--router-replica-sync")
	b := r.startFrontend(t, "--router-replica-sync")
	defer func() {
		for _, f := range []*frontend{a, b} {
			f.killed = true
			f.stop(5 * time.Second)
		}
	}()
	for round := range 3 {
		var long []*longStream
		count := map[*worker]int{}
		for i, f := range []*frontend{a, b, a} {
			l := r.startLong(t, f, fmt.Sprintf("replica %d %d", round, i))
			long = append(long, l)
			count[l.worker]++
		}
		r.checkStreaming(t, long)
		r.stopLong(t, &long)
		if len(count) != 3 {
			t.Errorf("round %d: three answers started through two synced frontends ran on %s, want one per worker", round, names(count))
		}
	}
}

// longStream is a long streaming answer in progress.
type longStream struct {
	*liveStream
	worker *worker
	cancel context.CancelFunc
}

// startLong starts a long streaming answer to an unrelated prompt
// through f, waits for its first token and finds the worker serving it.
func (r *kvRig) startLong(t testing.TB, f *frontend, seed string) *longStream {
	t.Helper()
	return r.startLongPrompt(t, f, words(seed, 200), longTokens)
}

// startLongPrompt is startLong with a given prompt and answer length.
func (r *kvRig) startLongPrompt(t testing.TB, f *frontend, prompt string, maxTokens int) *longStream {
	t.Helper()
	before := r.served(t)
	body, err := json.Marshal(object{"model": "demo", "prompt": prompt, "max_tokens": maxTokens, "stream": true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	a := &longStream{liveStream: &liveStream{proc: f.process, events: make(chan timedEvent, longTokens+16)}, cancel: cancel}
	go a.read(ctx, f.http, f.url+complPath, body, nil)
	a.waitContent(t, 1)
	for w, n := range r.served(t) {
		if n-before[w] == 1 && a.worker == nil {
			a.worker = w
		} else if n != before[w] {
			t.Fatalf("starting one answer moved %s's request count by %v", w.name, n-before[w])
		}
	}
	if a.worker == nil {
		t.Fatal("an answer streams but no worker's request count moved")
	}
	return a
}

// checkStreaming fails the test if one of the answers ended: the counts
// of answers per worker would then not be the router's load.
func (r *kvRig) checkStreaming(t testing.TB, long []*longStream) {
	t.Helper()
	for i, a := range long {
		select {
		case _, open := <-a.events:
			if !open {
				t.Fatalf("answer %d ended before the last one started (%v): the machine is too slow for this test", i, a.err)
			}
		default:
		}
	}
}

// stopLong cancels the answers and waits until no worker has a request
// in flight, so that their load does not steer the next requests.
func (r *kvRig) stopLong(t testing.TB, long *[]*longStream) {
	t.Helper()
	for _, a := range *long {
		a.cancel()
	}
	for _, a := range *long {
		for range a.events {
		}
	}
	*long = nil
	waitFor(t, 10*time.Second, "the workers to end the cancelled answers", func() bool {
		for _, w := range r.workers {
			if v, _ := w.scrape(t).value("dynamo_component_inflight_requests", generateEndpoint); v != 0 {
				return false
			}
		}
		return true
	}, processes(r.workers)...)
}

func names(count map[*worker]int) string {
	var parts []string
	for w, n := range count {
		parts = append(parts, fmt.Sprintf("%s: %d", w.name, n))
	}
	slices.Sort(parts)
	return "{" + strings.Join(parts, ", ") + "}"
}

// testRestart replaces the frontend by a new one, which has heard none
// of the KV events so far: it must load each worker's index when it
// discovers it, and send a prefix-sharing request to the worker holding
// the prefix from its first request on. Four prefixes, cached on
// whichever workers the routing picked, make a lucky pass unlikely (one
// chance in 81 for a frontend that knows nothing).
func (r *kvRig) testRestart(t *testing.T) {
	type cached struct {
		prefix string
		w      *worker
	}
	var prefixes []cached
	for i := range 3 {
		p := words(fmt.Sprintf("restart %d", i), prefixWords)
		prefixes = append(prefixes, cached{p, r.complete(t, r.f, p).worker})
	}
	old := r.f
	old.killed = true // stopped on purpose
	old.stop(5 * time.Second)
	r.f = r.startFrontend(t)
	if !strings.Contains(r.f.log.String(), "kv router: loaded a worker's KV index") {
		t.Error(`the new frontend did not log "kv router: loaded a worker's KV index"`)
	}
	holders := map[*worker]bool{}
	for i, p := range append(prefixes, cached{r.prefix, r.holder}) {
		holders[p.w] = true
		a := r.complete(t, r.f, p.prefix+" "+words(fmt.Sprintf("after restart %d", i), suffixWords))
		if a.worker != p.w {
			t.Errorf("prefix %d: the new frontend's first request went to %s, want %s, which holds the prefix", i, a.worker.name, p.w.name)
		}
		if a.cached < a.prompt/2 {
			t.Errorf("prefix %d: cached_tokens %d of %d prompt tokens: not answered from the cache", i, a.cached, a.prompt)
		}
	}
	t.Logf("the prefixes were held by %d different workers", len(holders))
}

// testApproximate starts a second frontend with --no-kv-events: it says
// it routes in approximate mode, and prefix-sharing requests still
// follow the worker its first request went to (its index records its
// own routing decisions).
func (r *kvRig) testApproximate(t *testing.T) {
	f := r.startFrontend(t, "--no-kv-events")
	if mode := f.health(t).KVRouting["demo"]; !strings.HasPrefix(mode, "approximate") {
		t.Errorf(`/health kv_routing["demo"] = %q, want approximate`, mode)
	}
	if v, ok := f.scrape(t).value("dynamo_frontend_kv_router_mode", `model="demo"`, `mode="approximate"`); !ok || v != 1 {
		t.Errorf(`dynamo_frontend_kv_router_mode{mode="approximate"} = %v (found %v), want 1`, v, ok)
	}
	r.followPrefix(t, f, "approximate")
	f.killed = true
	f.stop(5 * time.Second)
}

// testKill SIGKILLs the worker holding the first prefix. Prefix-sharing
// requests keep being answered, by the other workers; once its lease
// expired /health no longer lists it, and the prefix is cached again on
// one live worker that the following requests stick to.
//
// Until the lease expires the router still sees the dead worker and
// holds its blocks, so the first request after the kill is sent to it
// and finds no responder; the frontend's migration (limit 1) sends it
// again, and skips the dead worker until it leaves discovery.
func (r *kvRig) testKill(t *testing.T) {
	if r.holder == nil {
		t.Skip("needs the first subtest's prefix")
	}
	dead := r.holder
	before := r.f.migrations(t)
	dead.kill()
	r.workers = slices.DeleteFunc(r.workers, func(w *worker) bool { return w == dead })
	start := time.Now()
	for i := range 3 {
		a := r.complete(t, r.f, r.prefix+" "+words(fmt.Sprintf("after kill %d", i), suffixWords))
		t.Logf("request %d after the kill: %s, cached %d of %d", i, a.worker.name, a.cached, a.prompt)
	}
	after := r.f.migrations(t)
	t.Logf("requests sent again after the kill: %v", after.newRequest-before.newRequest)
	r.waitInstances(t, r.f)
	t.Logf("/health dropped the killed worker %s after the kill", time.Since(start).Round(100*time.Millisecond))
	first := r.complete(t, r.f, r.prefix+" "+words("after drop", suffixWords))
	for i := range 3 {
		a := r.complete(t, r.f, r.prefix+" "+words(fmt.Sprintf("after drop %d", i), suffixWords))
		if a.worker != first.worker {
			t.Errorf("prefix-sharing request %d after the drop went to %s, want %s", i, a.worker.name, first.worker.name)
		}
		if want := a.prompt / 2; a.cached < want {
			t.Errorf("prefix-sharing request %d after the drop: cached_tokens %d of %d", i, a.cached, a.prompt)
		}
	}
}

// kvHealth is the part of /health the KV tests read.
type kvHealth struct {
	KVRouting map[string]string `json:"kv_routing"`
}

func (f *frontend) health(t testing.TB) kvHealth {
	t.Helper()
	resp, body := f.get(t, "/health")
	var h kvHealth
	if resp.StatusCode != http.StatusOK {
		f.fatalf(t, "/health: status %d, body %s", resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, &h); err != nil {
		t.Fatalf("/health: %v in %s", err, body)
	}
	return h
}
