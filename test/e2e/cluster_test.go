package e2e

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/dynamo-go/dynamo/internal/testenv"
)

// cluster is one deployment: a discovery back-end and a request plane
// that every process started from it shares.
type cluster struct {
	t    testing.TB
	args []string      // --discovery-backend and --request-plane
	env  []string      // where etcd, NATS or the discovery directory are
	etcd *testenv.Etcd // the etcd of etcd discovery, nil otherwise
	nats *testenv.NATS // the NATS of the NATS request plane, nil otherwise
}

// newCluster starts what the configuration needs: an in-process etcd for
// etcd discovery, a temporary directory for file discovery, an in-process
// NATS for the NATS request plane.
func newCluster(t testing.TB, discovery, plane string) *cluster {
	t.Helper()
	c := &cluster{t: t, args: []string{"--discovery-backend", discovery, "--request-plane", plane}, env: []string{
		// Bind and advertise loopback addresses only, not the machine's
		// first interface or every interface.
		"DYN_TCP_RPC_HOST=127.0.0.1",
		"DYN_TCP_RESPONSE_STREAM_HOST=127.0.0.1",
		"DYN_SYSTEM_HOST=127.0.0.1",
		// Stop quickly in the cleanups.
		"DYN_GRACEFUL_SHUTDOWN_GRACE_PERIOD_SECS=0",
		"DYN_HTTP_GRACEFUL_SHUTDOWN_TIMEOUT_SECS=0",
	}}
	switch discovery {
	case "etcd":
		c.etcd = testenv.StartEtcd(t)
		c.env = append(c.env, "ETCD_ENDPOINTS="+c.etcd.URL)
	case "file":
		c.env = append(c.env, "DYN_FILE_KV="+t.TempDir())
	default:
		t.Fatalf("unknown discovery back-end %q", discovery)
	}
	if plane == "nats" {
		c.nats = testenv.StartNATS(t)
		c.env = append(c.env, "NATS_SERVER="+c.nats.URL)
	}
	return c
}

// startFrontend starts a frontend on 127.0.0.1, on a port it picks, and
// waits until it listens. env adds or overrides environment variables.
func (c *cluster) startFrontend(env ...string) *frontend {
	c.t.Helper()
	return c.startFrontendArgs(nil, env...)
}

// startFrontendArgs is startFrontend with extra command-line flags.
func (c *cluster) startFrontendArgs(extra []string, env ...string) *frontend {
	c.t.Helper()
	args := append(append([]string{"--http-host", "127.0.0.1", "--http-port", "0"}, c.args...), extra...)
	// Each frontend's stored responses in a directory of its own (env may
	// name another: the last value wins), never the user's state dir.
	env = append([]string{"DYN_RESPONSES_DATA_DIR=" + c.t.TempDir()}, env...)
	p := startProcess(c.t, "frontend", frontendBin, frontendListening, append(slices.Clone(c.env), env...), args...)
	return newFrontend(c.t, p)
}

// startMocker starts a mocker process serving the demo model, with its
// status server (/health, /metrics) on 127.0.0.1 on a port it picks (see
// process.address). Tests pass the flags they care about; env adds or
// overrides environment variables.
func (c *cluster) startMocker(name string, args []string, env ...string) *process {
	c.t.Helper()
	args = append(append([]string{"--model-path", demoModel}, c.args...), args...)
	env = append(append(slices.Clone(c.env), "DYN_SYSTEM_PORT=0"), env...)
	return startProcess(c.t, name, mockerBin, statusListening, env, args...)
}

// startMockersByID starts one mocker per name, one after the other, each
// once every frontend of fronts lists the one before, and returns them by
// their instance id.
func (c *cluster) startMockersByID(t *testing.T, fronts []*frontend, names []string, args []string, env ...string) map[uint64]*process {
	t.Helper()
	workers := map[uint64]*process{}
	for _, name := range names {
		p := c.startMocker(name, args, env...)
		waitFor(t, 30*time.Second, name+" in the frontends' /health", func() bool {
			for _, f := range fronts {
				if len(f.instanceIDs(t)) != len(workers)+1 {
					return false
				}
			}
			return true
		}, p)
		for _, id := range fronts[0].instanceIDs(t) {
			if workers[id] == nil {
				workers[id] = p
			}
		}
	}
	return workers
}

// frontend is a running frontend and the two clients the tests use: the
// process's net/http client (f.http) and the official SDK on it.
type frontend struct {
	*process
	url string        // e.g. http://127.0.0.1:8000
	sdk openai.Client // the official SDK, on the same transport
}

// newFrontend waits until p listens and returns the frontend there.
func newFrontend(t testing.TB, p *process) *frontend {
	t.Helper()
	url := "http://" + p.address(t)
	return &frontend{
		process: p,
		url:     url,
		sdk: openai.NewClient(
			option.WithBaseURL(url+"/v1"),
			option.WithAPIKey("x"),
			option.WithHTTPClient(p.http),
			option.WithMaxRetries(0), // a retry would hide a failure
		),
	}
}

// waitModels waits until GET /v1/models lists exactly the given models
// and each of them answers.
func (f *frontend) waitModels(t testing.TB, ids ...string) {
	t.Helper()
	want := slices.Sorted(slices.Values(ids))
	var got []string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if f.exited() {
			f.fatalf(t, "frontend exited while waiting for models %v", want)
		}
		if got = f.modelIDs(t); slices.Equal(got, want) {
			break
		}
		if time.Now().After(deadline) {
			f.fatalf(t, "after 30s /v1/models lists %v, want %v", got, want)
		}
	}
	// Known race in the product: a worker publishes its model card a
	// moment before its endpoint instance (pkg/backend/worker.go), and the
	// frontend lists the model as soon as the card arrives, so a request
	// in between gets 503 "No worker is available". Wait until each model
	// answers; the log says when the race was hit.
	for _, id := range want {
		refused := 0
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			resp, body := f.post(t, "/v1/chat/completions", userChat(id, "ping", 1))
			if resp.StatusCode == http.StatusOK {
				break
			}
			if resp.StatusCode != http.StatusServiceUnavailable || time.Now().After(deadline) {
				f.fatalf(t, "model %s is listed but does not answer: %d %s", id, resp.StatusCode, body)
			}
			refused++
		}
		if refused > 0 {
			t.Logf("model %s was listed but refused %d requests with 503 before it answered", id, refused)
		}
	}
}

// modelIDs returns the sorted ids GET /v1/models lists, nil on an error.
func (f *frontend) modelIDs(t testing.TB) []string {
	resp, err := f.http.Get(f.url + "/v1/models")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var list struct {
		Object string
		Data   []struct{ ID, Object string }
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&list) != nil {
		return nil
	}
	if list.Object != "list" {
		t.Errorf("GET /v1/models: object %q, want list", list.Object)
	}
	ids := []string{}
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	slices.Sort(ids)
	return ids
}

// deterministic are the mocker flags for repeatable answers at test speed.
var deterministic = []string{"--deterministic", "--speedup-ratio", "200"}
