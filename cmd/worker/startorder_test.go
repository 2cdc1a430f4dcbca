package main

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/dynamo-go/dynamo/internal/testenv"
)

// A worker whose engine and etcd are both missing says so at once, one
// line each, and when the engine's wait runs out it exits 1 with one
// line naming both.
func TestMissingEngineAndEtcdAreReportedTogether(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	etcd := testenv.StartEtcd(t)
	etcd.Stop()
	engine := fmt.Sprintf("http://127.0.0.1:%d", testenv.FreePort(t)) // must refuse connections
	cmd := workerCmd([]string{"DYN_DISCOVERY_BACKEND=etcd", "ETCD_ENDPOINTS=" + etcd.URL, "DYN_TCP_RPC_HOST=127.0.0.1", "DYN_SYSTEM_PORT=-1", "DYN_LOG=info"},
		"--engine", "vllm", "--engine-url", engine, "--engine-start-timeout", "3s", "--model-path", "../../models/demo")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("worker: %v, want exit 1; stderr:\n%s", err, stderr.String())
	}
	out := stderr.String()
	for _, want := range []string{"bridge: waiting for the engine; retrying", "discovery: waiting for etcd; retrying"} {
		if n := strings.Count(out, want); n != 1 {
			t.Errorf("%q logged %d times, want once:\n%s", want, n, out)
		}
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := lines[len(lines)-1]
	for _, want := range []string{"worker: ", engine, "did not become ready within 3s", "etcd/NATS were not reached either", "etcd at"} {
		if !strings.Contains(last, want) {
			t.Errorf("the last line lacks %q: %s", want, last)
		}
	}
}
