package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMigration kills the worker serving a request and checks that the
// client still gets the whole answer, byte for byte the answer it gets
// when nothing fails. It runs on both request planes with etcd discovery,
// three mocker processes and two frontends: one that migrates
// (--migration-limit 3) and one that does not (DYN_MIGRATION_LIMIT=0).
//
// The mockers are deterministic: the token at sequence position p depends
// only on the seed and p. Migration re-issues the prompt plus the tokens
// generated so far, so a migrated answer continues the same sequence and
// equals the reference answer exactly only if no token was lost or
// repeated.
func TestMigration(t *testing.T) {
	for _, plane := range []string{"tcp", "nats"} {
		t.Run(plane, func(t *testing.T) {
			r := newMigrationRig(t, plane)
			t.Run("SIGKILL mid-stream, streaming chat", r.testKillStream)
			t.Run("SIGSTOP mid-stream (a frozen worker), streaming chat", r.testFreezeStream)
			t.Run("SIGKILL mid-answer, unary completion", r.testKillUnary)
			t.Run("SIGTERM with several streams in flight", r.testTerminate)
			t.Run("limit 0, streaming chat", r.testNoMigrationStream)
			t.Run("limit 0, unary completion", r.testNoMigrationUnary)
			t.Run("50 concurrent streams, one worker SIGKILLed", r.testConcurrent)
			// Last: it leaves no worker.
			t.Run("every worker killed", r.testAllKilled)
		})
	}
}

// Mocker settings. At speedup 1 a decode pass is about 6 ms, so a
// 300-token answer streams for about two seconds: long enough to find
// its worker and kill it in the middle, short enough for the test budget.
var migrationMocker = []string{"--deterministic", "--speedup-ratio", "1",
	// The card's limit; both frontends override it with their own.
	"--migration-limit", "2"}

var migrationMockerEnv = []string{
	// A killed worker leaves discovery within about two seconds.
	"ETCD_LEASE_TTL=2",
	// SIGTERM: keep serving for half a second after unregistering, drain
	// for half a second, then end what is left (a migratable
	// EngineShutdown).
	"DYN_GRACEFUL_SHUTDOWN_GRACE_PERIOD_SECS=0.5",
	"DYN_RUNTIME_GRACEFUL_SHUTDOWN_TIMEOUT_SECS=0.5",
}

const (
	longAnswer = 300 // max_tokens of the single-request cases
	chatPath   = "/v1/chat/completions"
	complPath  = "/v1/completions"
)

// migrationRig is one cluster shared by the subtests of a request plane.
type migrationRig struct {
	c       *cluster
	workers []*worker // the live workers
	started int
	mig     *frontend // --migration-limit 3
	off     *frontend // DYN_MIGRATION_LIMIT=0
}

func newMigrationRig(t testing.TB, plane string) *migrationRig {
	r := &migrationRig{c: newCluster(t, "etcd", plane)}
	for range 3 {
		r.startWorker(t)
	}
	// A frozen worker's streams end 1 s after it left discovery.
	r.mig = r.c.startFrontendArgs([]string{"--migration-limit", "3"}, "DYN_ORPHANED_STREAM_TIMEOUT_SECS=1")
	r.off = r.c.startFrontend("DYN_MIGRATION_LIMIT=0")
	cards := r.c.startFrontend() // neither flag nor env: the cards' limit
	for _, f := range []*frontend{r.mig, r.off, cards} {
		f.waitModels(t, "demo")
	}
	r.waitInstances(t)
	// The frontend's limit wins over the card's, from the flag or the
	// environment; without either the card's counts.
	for _, c := range []struct {
		name string
		f    *frontend
		want float64
	}{{"--migration-limit 3", r.mig, 3}, {"DYN_MIGRATION_LIMIT=0", r.off, 0}, {"card (mocker --migration-limit 2)", cards, 2}} {
		if v, ok := c.f.scrape(t).value("dynamo_frontend_model_migration_limit", `model="demo"`); !ok || v != c.want {
			t.Errorf("frontend with %s: model_migration_limit %v (found %v), want %v", c.name, v, ok, c.want)
		}
	}
	cards.killed = true // stopped on purpose
	cards.stop(5 * time.Second)
	return r
}

// worker is a mocker process with its own status server.
type worker struct {
	*process
	id uint64 // its instance id, once it serves
}

var servingLine = regexp.MustCompile(`runtime: serving endpoint".* instance_id=([0-9a-f]+)`)

// waitServing waits up to d until the worker logs that it serves its
// endpoint, and reads its instance id from that line.
func (w *worker) waitServing(t testing.TB, d time.Duration) {
	t.Helper()
	m := w.waitLine(t, d, w.name+" to serve", servingLine)
	id, err := strconv.ParseUint(m[1], 16, 64)
	if err != nil {
		w.fatalf(t, "%s: instance id %q: %v", w.name, m[1], err)
	}
	w.id = id
}

// processes returns the workers' processes, for waitFor and fatalf.
func processes(workers []*worker) []*process {
	out := make([]*process, len(workers))
	for i, w := range workers {
		out[i] = w.process
	}
	return out
}

// startWorker starts one more mocker process; waitInstances waits until
// it serves.
func (r *migrationRig) startWorker(t testing.TB) *worker {
	t.Helper()
	r.started++
	w := &worker{process: r.c.startMocker(fmt.Sprintf("mocker-%d", r.started), migrationMocker, migrationMockerEnv...)}
	r.workers = append(r.workers, w)
	return w
}

// replace starts a worker for each dead one and waits until both
// frontends route to exactly the live workers.
func (r *migrationRig) replace(t testing.TB, dead ...*worker) {
	t.Helper()
	r.workers = slices.DeleteFunc(r.workers, func(w *worker) bool { return slices.Contains(dead, w) })
	for range dead {
		r.startWorker(t)
	}
	r.waitInstances(t)
}

// waitInstances waits until every live worker serves and both frontends'
// /health list exactly their instances: no dead one that a request could
// still be routed to, no live one missing.
func (r *migrationRig) waitInstances(t testing.TB) {
	t.Helper()
	var want []uint64
	for _, w := range r.workers {
		w.waitServing(t, 20*time.Second)
		want = append(want, w.id)
	}
	slices.Sort(want)
	for _, f := range []*frontend{r.mig, r.off} {
		f.waitFor(t, 20*time.Second, fmt.Sprintf("the frontend to route to exactly instances %x", want), func() bool {
			return slices.Equal(f.instanceIDs(t), want)
		})
	}
}

// instanceIDs returns the sorted worker instance ids the frontend's
// /health lists.
func (f *frontend) instanceIDs(t testing.TB) []uint64 {
	t.Helper()
	resp, body := f.get(t, "/health")
	var h struct {
		Instances []struct {
			ID uint64 `json:"instance_id"`
		} `json:"instances"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &h) != nil {
		return nil
	}
	var ids []uint64
	for _, in := range h.Instances {
		ids = append(ids, in.ID)
	}
	slices.Sort(ids)
	return ids
}

// metric reads one sample of the worker's /metrics (0 when absent).
func (r *migrationRig) metric(t testing.TB, w *worker, name string) float64 {
	t.Helper()
	v, _ := w.scrape(t).value(name, generateEndpoint)
	return v
}

// busy returns the live workers with requests in flight, and how many
// each has. Only the test sends requests, so a worker with one in flight
// is the one serving the test's request.
func (r *migrationRig) busy(t testing.TB) map[*worker]int {
	t.Helper()
	out := map[*worker]int{}
	for _, w := range r.workers {
		if n := r.metric(t, w, "dynamo_component_inflight_requests"); n > 0 {
			out[w] = int(n)
		}
	}
	return out
}

// serving returns the one worker with a request in flight.
func (r *migrationRig) serving(t testing.TB) *worker {
	t.Helper()
	var b map[*worker]int
	waitFor(t, 5*time.Second, "exactly one worker with a request in flight", func() bool {
		b = r.busy(t)
		return len(b) == 1
	}, processes(r.workers)...)
	for w := range b {
		return w
	}
	return nil
}

// busiest returns the worker with the most requests in flight, and their
// number.
func (r *migrationRig) busiest(t testing.TB) (*worker, int) {
	t.Helper()
	var best *worker
	n := 0
	for w, k := range r.busy(t) {
		if k > n {
			best, n = w, k
		}
	}
	if best == nil {
		fatalf(t, processes(r.workers), "no worker has a request in flight")
	}
	return best, n
}

// terminate sends SIGTERM, as an orchestrator stopping the worker would.
func (p *process) terminate() {
	p.killed = true // stopped on purpose
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
}

// migrationSnapshot is what the frontend says about migrations so far.
type migrationSnapshot struct {
	ongoing, newRequest float64 // model_migration_total by migration_type
	disconnected        int     // "Stream disconnected... recreating stream..." log lines
	recreated           int     // "stream recreated" log lines
	cannot              int     // "Cannot recreate stream" log lines
	off                 int     // "... migration is off for this request" log lines
	generated           []int   // the generated= field of the disconnected lines
}

var disconnectedLine = regexp.MustCompile(`migration: Stream disconnected\.\.\. recreating stream\.\.\.".* generated=(\d+)`)

func (f *frontend) migrations(t testing.TB) migrationSnapshot {
	t.Helper()
	m := f.scrape(t)
	var s migrationSnapshot
	s.ongoing, _ = m.value("dynamo_frontend_model_migration_total", `model="demo"`, `migration_type="ongoing_request"`)
	s.newRequest, _ = m.value("dynamo_frontend_model_migration_total", `model="demo"`, `migration_type="new_request"`)
	log := f.log.String()
	s.recreated = strings.Count(log, "migration: stream recreated")
	s.cannot = strings.Count(log, "Cannot recreate stream")
	s.off = strings.Count(log, "Cannot recreate stream: migration is off for this request")
	for _, m := range disconnectedLine.FindAllStringSubmatch(log, -1) {
		n, _ := strconv.Atoi(m[1])
		s.generated = append(s.generated, n)
	}
	s.disconnected = len(s.generated)
	return s
}

// checkOneMigration checks that exactly one mid-stream migration happened
// between before and the frontend's state now, after between lo and hi
// tokens, and that it succeeded.
func checkOneMigration(t testing.TB, f *frontend, before migrationSnapshot, lo, hi int) {
	t.Helper()
	// The client can see the answer before the test has copied the
	// frontend's log lines from its stderr pipe.
	var after migrationSnapshot
	f.waitFor(t, 5*time.Second, "the frontend's migration log lines", func() bool {
		after = f.migrations(t)
		return after.disconnected > before.disconnected && after.recreated > before.recreated
	})
	if d := after.ongoing - before.ongoing; d != 1 {
		t.Errorf("model_migration_total{migration_type=ongoing_request} moved by %v, want 1", d)
	}
	if d := after.newRequest - before.newRequest; d != 0 {
		t.Errorf("model_migration_total{migration_type=new_request} moved by %v, want 0", d)
	}
	if d := after.disconnected - before.disconnected; d != 1 {
		t.Errorf("%d new \"Stream disconnected... recreating stream...\" log lines, want 1", d)
	} else if g := after.generated[len(after.generated)-1]; g < lo || g >= hi {
		t.Errorf("the stream broke after %d tokens, want in [%d, %d): not mid-stream", g, lo, hi)
	} else {
		t.Logf("the worker was killed after %d of %d tokens", g, hi)
	}
	if d := after.recreated - before.recreated; d != 1 {
		t.Errorf("%d new \"stream recreated\" log lines, want 1", d)
	}
	if d := after.cannot - before.cannot; d != 0 {
		t.Errorf("%d new \"Cannot recreate stream\" log lines, want 0", d)
	}
}

// streamRequest is a streaming request with usage whose answer depends
// only on path, prompt, seed and maxTokens.
func streamRequest(path, prompt string, seed, maxTokens int) object {
	req := request(path, prompt, seed, maxTokens)
	req["stream"] = true
	req["stream_options"] = object{"include_usage": true}
	return req
}

// sameAnswer checks a reassembled stream against the reference answer.
func sameAnswer(t testing.TB, what string, got, want streamed, maxTokens int) {
	t.Helper()
	if got.text != want.text {
		t.Errorf("%s: the answer differs from the reference answer (a token lost or repeated)\n got %q\nwant %q", what, got.text, want.text)
	}
	if got.finishReason != "length" {
		t.Errorf("%s: finish_reason %q, want length", what, got.finishReason)
	}
	if got.usage == nil || want.usage == nil || *got.usage != *want.usage || got.usage.CompletionTokens != maxTokens {
		t.Errorf("%s: usage %+v, reference usage %+v, want %d completion tokens", what, got.usage, want.usage, maxTokens)
	}
}

func (r *migrationRig) testKillStream(t *testing.T) {
	req := func() object { return streamRequest(chatPath, "Tell me a long story about yourself.", 1, longAnswer) }
	want := r.mig.streamAll(t, chatPath, req())
	before := r.mig.migrations(t)

	s := r.mig.startStream(t, chatPath, req())
	s.waitContent(t, 30)
	w := r.serving(t)
	killed := time.Now()
	w.kill()
	got := reassemble(t, chatPath, s.finish(t, 30*time.Second))
	sameAnswer(t, "migrated stream", got, want, longAnswer)
	if n := s.contentAfter(killed); n == 0 {
		t.Error("no content arrived after the kill")
	}
	checkOneMigration(t, r.mig, before, 30, longAnswer)
	r.replace(t, w)
}

// testFreezeStream freezes the serving worker (SIGSTOP): its connection
// stays open and its kernel answers keep-alives, so only its lease, which
// expires, tells; then its silent stream ends and migrates.
func (r *migrationRig) testFreezeStream(t *testing.T) {
	req := func() object {
		return streamRequest(chatPath, "Tell me a long story about a frozen lake.", 3, longAnswer)
	}
	want := r.mig.streamAll(t, chatPath, req())
	before := r.mig.migrations(t)

	s := r.mig.startStream(t, chatPath, req())
	s.waitContent(t, 30)
	w := r.serving(t)
	frozen := time.Now()
	if err := w.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	got := reassemble(t, chatPath, s.finish(t, 30*time.Second))
	sameAnswer(t, "stream migrated from a frozen worker", got, want, longAnswer)
	if n := s.contentAfter(frozen); n == 0 {
		t.Error("no content arrived after the freeze")
	}
	t.Logf("the stream finished %v after its worker froze", time.Since(frozen).Round(time.Millisecond))
	checkOneMigration(t, r.mig, before, 30, longAnswer)
	w.kill()
	r.replace(t, w)
}

func (r *migrationRig) testKillUnary(t *testing.T) {
	req := func() object { return request(complPath, "Once upon a time, far away,", 2, longAnswer) }
	want := r.mig.unary(t, complPath, req())
	before := r.mig.migrations(t)
	sent := r.responseBytes(t)

	res := r.mig.postAsync(t, complPath, req())
	w := r.serving(t)
	r.waitAnswering(t, w, sent)
	w.kill()
	got := <-res
	if got.err != nil || got.status != http.StatusOK {
		r.mig.fatalf(t, "migrated unary completion: status %d, err %v, body %s", got.status, got.err, got.body)
	}
	var u response
	if err := json.Unmarshal(got.body, &u); err != nil {
		t.Fatalf("%v in %s", err, got.body)
	}
	if u.text() != want.text() || u.finishReason() != "length" {
		t.Errorf("migrated unary completion differs from the reference answer\n got %q (%s)\nwant %q", u.text(), u.finishReason(), want.text())
	}
	if u.Usage == nil || want.Usage == nil || *u.Usage != *want.Usage {
		t.Errorf("usage %+v, reference usage %+v", u.Usage, want.Usage)
	}
	checkOneMigration(t, r.mig, before, 1, longAnswer)
	r.replace(t, w)
}

// responseBytes returns how many response bytes each live worker has sent.
func (r *migrationRig) responseBytes(t testing.TB) map[*worker]float64 {
	t.Helper()
	out := map[*worker]float64{}
	for _, w := range r.workers {
		out[w] = r.metric(t, w, "dynamo_component_response_bytes_total")
	}
	return out
}

// waitAnswering waits until w has sent 2 kB (a few dozen tokens) more
// than before, so that a kill lands in the middle of the answer.
func (r *migrationRig) waitAnswering(t testing.TB, w *worker, before map[*worker]float64) {
	t.Helper()
	w.waitFor(t, 5*time.Second, w.name+" to send the first tokens", func() bool {
		return r.metric(t, w, "dynamo_component_response_bytes_total") > before[w]+2000
	})
}

func (r *migrationRig) testTerminate(t *testing.T) {
	const streams = 6
	reqs := make([]func() object, streams)
	for i := range reqs {
		reqs[i] = func() object {
			return streamRequest(chatPath, fmt.Sprintf("Story number %d, please.", i), 100+i, longAnswer)
		}
	}
	want := r.mig.references(t, chatPath, reqs)
	before := r.mig.migrations(t)
	mark := len(r.mig.log.String())

	live := make([]*liveStream, streams)
	for i, req := range reqs {
		live[i] = r.mig.startStream(t, chatPath, req())
	}
	for _, s := range live {
		s.waitContent(t, 10)
	}
	w, inflight := r.busiest(t)
	w.terminate()
	for i, s := range live {
		sameAnswer(t, fmt.Sprintf("stream %d", i), reassemble(t, chatPath, s.finish(t, 30*time.Second)), want[i], longAnswer)
	}
	select {
	case <-w.done:
		if w.err != nil {
			t.Errorf("%s after SIGTERM: %v, want a clean exit%s", w.name, w.err, w.lastLines())
		}
	case <-time.After(15 * time.Second):
		t.Errorf("%s still running 15s after SIGTERM%s", w.name, w.lastLines())
	}
	after := r.mig.migrations(t)
	if d := after.cannot - before.cannot; d != 0 {
		t.Errorf("%d new \"Cannot recreate stream\" log lines, want 0", d)
	}
	t.Logf("SIGTERM with %d of %d streams on the worker: %v of them migrated", inflight, streams, after.ongoing-before.ongoing)
	for _, line := range strings.Split(r.mig.log.String()[mark:], "\n") {
		if strings.Contains(line, "Stream disconnected") {
			t.Logf("frontend: %s", line[strings.Index(line, " err="):])
		}
	}
	r.replace(t, w)
}

// testNoMigrationStream: without migration, the client gets an error
// event, not [DONE], soon after the kill, and the frontend carries on.
func (r *migrationRig) testNoMigrationStream(t *testing.T) {
	before := r.off.migrations(t)
	s := r.off.startStream(t, chatPath, streamRequest(chatPath, "Tell me a long story.", 3, longAnswer))
	s.waitContent(t, 30)
	w := r.serving(t)
	killed := time.Now()
	w.kill()
	body := s.finish(t, 10*time.Second)
	checkErrorEvent(t, "stream after the kill, limit 0", body)
	if d := s.errorAt().Sub(killed); d > time.Second {
		t.Errorf("the error event arrived %s after the kill, want within 1s", d)
	}
	r.checkNoMigration(t, before)
	r.replace(t, w)
}

func (r *migrationRig) testNoMigrationUnary(t *testing.T) {
	before := r.off.migrations(t)
	sent := r.responseBytes(t)
	res := r.off.postAsync(t, complPath, request(complPath, "Once upon a time", 4, longAnswer))
	w := r.serving(t)
	r.waitAnswering(t, w, sent)
	killed := time.Now()
	w.kill()
	got := <-res
	if got.err != nil {
		r.off.fatalf(t, "unary after the kill, limit 0: %v", got.err)
	}
	if got.status < 500 {
		r.off.fatalf(t, "unary after the kill, limit 0: status %d %s, want a 5xx error", got.status, got.body)
	}
	decodeError(t, got.status, got.body)
	if d := got.at.Sub(killed); d > time.Second {
		t.Errorf("the error arrived %s after the kill, want within 1s", d)
	}
	t.Logf("limit 0, unary: %d %s", got.status, got.body)
	r.checkNoMigration(t, before)
	r.replace(t, w)
}

// checkErrorEvent checks that an SSE body ends with an error event
// {"error":{message, type, param, code >= 500}} and has no [DONE], and
// returns the error.
func checkErrorEvent(t testing.TB, what string, body []byte) apiError {
	t.Helper()
	events := parseSSE(t, body)
	if len(events) == 0 || events[len(events)-1].event != "error" || bytes.Contains(body, []byte("data: [DONE]")) {
		t.Fatalf("%s: want the stream to end with an error event and no [DONE]:\n%s", what, body)
	}
	last := events[len(events)-1]
	e := decodeErrorObject(t, []byte(last.data))
	if e.Code < 500 {
		t.Errorf("%s: error event %q: want code >= 500", what, last.data)
	}
	t.Logf("%s: %s", what, last.data)
	return e
}

// checkNoMigration checks the limit-0 frontend after a kill: it said why
// it did not migrate, migrated nothing, and answers the next request.
func (r *migrationRig) checkNoMigration(t testing.TB, before migrationSnapshot) {
	t.Helper()
	var after migrationSnapshot
	r.off.waitFor(t, 5*time.Second, `"Cannot recreate stream: migration is off for this request" in the frontend's log`, func() bool {
		after = r.off.migrations(t)
		return after.off > before.off
	})
	if after.off != before.off+1 || after.ongoing != before.ongoing || after.newRequest != before.newRequest || after.disconnected != before.disconnected {
		t.Errorf("the limit-0 frontend: before %+v, after %+v; want one \"migration is off\" line and no migration", before, after)
	}
	if resp, body := r.off.get(t, "/health"); resp.StatusCode != http.StatusOK {
		t.Errorf("/health after the failure: %d %s", resp.StatusCode, body)
	}
	if u := r.off.unary(t, chatPath, userChat("demo", "Hi", 8)); u.Usage == nil || u.Usage.CompletionTokens != 8 {
		t.Errorf("the next request after the failure: %+v", u)
	}
}

func (r *migrationRig) testConcurrent(t *testing.T) {
	const streams, maxTokens = 50, 200
	reqs := make([]func() object, streams)
	for i := range reqs {
		reqs[i] = func() object {
			return streamRequest(chatPath, fmt.Sprintf("Tale %d of the fifty.", i), 1000+i, maxTokens)
		}
	}
	want := r.mig.references(t, chatPath, reqs)
	before := r.mig.migrations(t)

	live := make([]*liveStream, streams)
	for i, req := range reqs {
		live[i] = r.mig.startStream(t, chatPath, req())
	}
	for _, s := range live {
		s.waitContent(t, 5)
	}
	w, inflight := r.busiest(t)
	w.kill()
	for i, s := range live {
		sameAnswer(t, fmt.Sprintf("stream %d", i), reassemble(t, chatPath, s.finish(t, 60*time.Second)), want[i], maxTokens)
	}
	after := r.mig.migrations(t)
	if d := after.ongoing - before.ongoing; d != float64(inflight) {
		t.Errorf("%v mid-stream migrations, want %d (the streams on the killed worker, each once)", d, inflight)
	}
	if d := after.cannot - before.cannot; d != 0 {
		t.Errorf("%d new \"Cannot recreate stream\" log lines, want 0", d)
	}
	t.Logf("%d of %d streams were on the killed worker; all completed", inflight, streams)
	r.replace(t, w)
}

// testAllKilled: when every worker dies mid-stream the client gets an
// error in bounded time, and the frontend keeps nothing of the request.
func (r *migrationRig) testAllKilled(t *testing.T) {
	f := r.mig
	goroutines := func() float64 {
		f.http.Transport.(*http.Transport).CloseIdleConnections()
		v, _ := f.scrape(t).value("go_goroutines")
		return v
	}
	base := goroutines()
	before := f.migrations(t)

	s := f.startStream(t, chatPath, streamRequest(chatPath, "Tell me everything.", 5, longAnswer))
	s.waitContent(t, 30)
	killed := time.Now()
	for _, w := range r.workers {
		w.kill()
	}
	r.workers = nil
	body := s.finish(t, 20*time.Second)
	e := checkErrorEvent(t, "stream after every worker died", body)
	if e.Code != 500 || !strings.Contains(e.Message, "Stream ended before generation completed") {
		t.Errorf("error %+v: want the original failure (500, the stream ended before generation completed), not a retry's", e)
	}
	var after migrationSnapshot
	f.waitFor(t, 5*time.Second, `"Cannot recreate stream" in the frontend's log`, func() bool {
		after = f.migrations(t)
		return after.cannot > before.cannot
	})
	t.Logf("error event %s after the kill; %v mid-stream and %v new-request migrations before giving up; %d \"Cannot recreate stream\" log lines",
		s.errorAt().Sub(killed).Round(time.Millisecond), after.ongoing-before.ongoing, after.newRequest-before.newRequest, after.cannot-before.cannot)
	f.waitFor(t, 10*time.Second, "the frontend's inflight_requests to return to 0", func() bool {
		v, ok := f.scrape(t).value("dynamo_frontend_inflight_requests", `model="demo"`)
		return ok && v == 0
	})
	var now float64
	f.waitFor(t, 10*time.Second, fmt.Sprintf("go_goroutines to return to its level before the request (%v)", base), func() bool {
		now = goroutines()
		return now <= base+3
	})
	t.Logf("frontend goroutines: %v before the request, %v after", base, now)
}

// liveStream is a streaming request read as it arrives.
type liveStream struct {
	proc   *process        // the frontend answering it
	sent   time.Time       // when the request was sent; read it after the first event
	events chan timedEvent // closed at the end of the body
	seen   []timedEvent    // the events taken from events so far
	body   bytes.Buffer    // the whole body; read it once events is closed
	err    error           // a failure; read it once events is closed
}

type timedEvent struct {
	sseEvent
	at time.Time // when the blank line ending it arrived
}

// startStream sends a streaming request from its own goroutine. The
// request is cancelled when the test ends.
func (f *frontend) startStream(t testing.TB, path string, req object) *liveStream {
	t.Helper()
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	s := &liveStream{proc: f.process, events: make(chan timedEvent, 4096)}
	go s.read(t.Context(), f.http, f.url+path, b, nil)
	return s
}

// startStreamHeaders is startStream with extra request headers.
func (f *frontend) startStreamHeaders(t testing.TB, path string, req object, h http.Header) *liveStream {
	t.Helper()
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	s := &liveStream{proc: f.process, events: make(chan timedEvent, 4096)}
	go s.read(t.Context(), f.http, f.url+path, b, h)
	return s
}

func (s *liveStream) read(ctx context.Context, c *http.Client, url string, body []byte, h http.Header) {
	defer close(s.events)
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		s.err = err
		return
	}
	hr.Header.Set("Content-Type", "application/json")
	for k, v := range h {
		hr.Header[k] = v
	}
	s.sent = time.Now()
	resp, err := c.Do(hr)
	if err != nil {
		s.err = err
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		s.err = fmt.Errorf("status %d: %s", resp.StatusCode, b)
		return
	}
	rd := bufio.NewReader(resp.Body)
	var cur sseEvent
	for {
		line, err := rd.ReadString('\n')
		s.body.WriteString(line)
		if err != nil {
			if err != io.EOF {
				s.err = err
			}
			return
		}
		switch line = strings.TrimRight(line, "\r\n"); {
		case line == "":
			s.events <- timedEvent{cur, time.Now()}
			cur = sseEvent{}
		case strings.HasPrefix(line, "data: "):
			cur.data += strings.TrimPrefix(line, "data: ")
		case strings.HasPrefix(line, "event: "):
			cur.event = strings.TrimPrefix(line, "event: ")
		}
	}
}

// content reports whether an event carries answer text.
func (e timedEvent) content() bool {
	if e.event != "" || e.data == "[DONE]" {
		return false
	}
	var c response
	if json.Unmarshal([]byte(e.data), &c) != nil {
		return false
	}
	for _, ch := range c.Choices {
		if ch.Delta.Content+ch.Text != "" {
			return true
		}
	}
	return false
}

// waitContent waits until n chunks with text have arrived.
func (s *liveStream) waitContent(t testing.TB, n int) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for got := 0; got < n; {
		select {
		case e, ok := <-s.events:
			if !ok {
				s.proc.fatalf(t, "the stream ended after %d of the %d chunks waited for: %v\n%s", got, n, s.err, s.body.String())
			}
			s.seen = append(s.seen, e)
			if e.content() {
				got++
			}
		case <-timeout:
			s.proc.fatalf(t, "10s waiting for %d chunks, %d arrived", n, got)
		}
	}
}

// finish reads the stream to its end (failing the test after d) and
// returns the whole body.
func (s *liveStream) finish(t testing.TB, d time.Duration) []byte {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case e, ok := <-s.events:
			if !ok {
				if s.err != nil {
					s.proc.fatalf(t, "stream: %v", s.err)
				}
				return s.body.Bytes()
			}
			s.seen = append(s.seen, e)
		case <-timeout:
			s.proc.fatalf(t, "the stream did not end within %s (%d events so far)", d, len(s.seen))
		}
	}
}

// contentAfter counts the chunks with text that arrived after at.
func (s *liveStream) contentAfter(at time.Time) int {
	n := 0
	for _, e := range s.seen {
		if e.at.After(at) && e.content() {
			n++
		}
	}
	return n
}

// errorAt is when the error event arrived (zero: none).
func (s *liveStream) errorAt() time.Time {
	for _, e := range s.seen {
		if e.event == "error" {
			return e.at
		}
	}
	return time.Time{}
}

// streamAll sends a streaming request that must succeed and reassembles
// it.
func (f *frontend) streamAll(t testing.TB, path string, req object) streamed {
	t.Helper()
	return reassemble(t, path, f.startStream(t, path, req).finish(t, 30*time.Second))
}

// references streams every request at once and returns the answers, in
// order.
func (f *frontend) references(t testing.TB, path string, reqs []func() object) []streamed {
	t.Helper()
	live := make([]*liveStream, len(reqs))
	for i, req := range reqs {
		live[i] = f.startStream(t, path, req())
	}
	out := make([]streamed, len(reqs))
	for i, s := range live {
		out[i] = reassemble(t, path, s.finish(t, 60*time.Second))
	}
	return out
}

// asyncResult is the outcome of postAsync.
type asyncResult struct {
	status int
	body   []byte
	err    error
	at     time.Time // when the body was read
}

// postAsync sends a non-streaming request from its own goroutine.
func (f *frontend) postAsync(t testing.TB, path string, req object) <-chan asyncResult {
	t.Helper()
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan asyncResult, 1)
	ctx := t.Context()
	go func() {
		var r asyncResult
		defer func() { r.at = time.Now(); out <- r }()
		hr, err := http.NewRequestWithContext(ctx, http.MethodPost, f.url+path, bytes.NewReader(b))
		if err != nil {
			r.err = err
			return
		}
		hr.Header.Set("Content-Type", "application/json")
		resp, err := f.http.Do(hr)
		if err != nil {
			r.err = err
			return
		}
		defer resp.Body.Close()
		r.status = resp.StatusCode
		r.body, r.err = io.ReadAll(resp.Body)
	}()
	return out
}
