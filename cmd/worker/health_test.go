package main

import (
	"encoding/json"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/bridge/bridgetest"
)

var statusAddr = regexp.MustCompile(`msg="runtime: status server listening" addr=(\S+)`)

// The worker's /health follows its engine: ready while the engine's
// /health answers, notready (503) within a few probe intervals of the
// engine's death, with the health checks on and with them off (the
// engine's /health is probed either way).
func TestHealthTurnsNotreadyWhenTheEngineDies(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	for _, checks := range []string{"true", "false"} {
		t.Run("DYN_HEALTH_CHECK_ENABLED="+checks, func(t *testing.T) {
			srv := bridgetest.New("vllm", bridgetest.Options{Model: "demo"})
			defer srv.Close()
			var logs testenv.Buffer
			cmd := workerCmd(append(memEnv, "DYN_LOG=info", "DYN_HEALTH_CHECK_ENABLED="+checks, "DYN_HEALTH_CHECK_PROBE_INTERVAL=0.2",
				"DYN_CANARY_WAIT_TIME=0.5"), "--engine", "vllm", "--engine-url", srv.URL, "--model-path", "../../models/demo")
			cmd.Stderr = &logs
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				<-exited
				if t.Failed() {
					t.Logf("worker log:\n%s", logs.String())
				}
			})
			var addr string
			testenv.WaitFor(t, 30*time.Second, "the status server's address", func() bool {
				if m := statusAddr.FindStringSubmatch(logs.String()); m != nil {
					addr = m[1]
				}
				return addr != ""
			})
			health := func() (int, string) {
				resp, err := http.Get("http://" + addr + "/health")
				if err != nil {
					return 0, err.Error()
				}
				defer resp.Body.Close()
				var h struct {
					Status string `json:"status"`
				}
				_ = json.NewDecoder(resp.Body).Decode(&h)
				return resp.StatusCode, h.Status
			}
			testenv.WaitFor(t, 30*time.Second, "/health ready", func() bool {
				code, status := health()
				return code == http.StatusOK && status == "ready"
			})
			srv.Close() // the engine dies
			testenv.WaitFor(t, 10*time.Second, "/health notready after the engine died", func() bool {
				code, status := health()
				return code == http.StatusServiceUnavailable && status == "notready"
			})
		})
	}
}
