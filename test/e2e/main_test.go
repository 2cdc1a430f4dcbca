package e2e

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// Paths of the binaries TestMain builds.
var (
	frontendBin string
	mockerBin   string
	workerBin   string
	benchBin    string
)

// demoModel is the repository's demo model directory (ChatML template,
// context length 4096).
var demoModel, _ = filepath.Abs("../../models/demo")

func TestMain(m *testing.M) {
	flag.Parse()
	if host := os.Getenv(serversHostEnv); host != "" {
		// The test binary run on a simulated host (netns_test.go).
		os.Exit(serveNetns(host, os.Getenv(serversDirEnv)))
	}
	if testing.Short() {
		fmt.Println("e2e: skipped under -short (builds the binaries and runs them as processes)")
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "dynamo-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		// One go build for the binaries: a directory -o writes each main
		// package under its own name.
		build := exec.Command("go", "build", "-o", dir+string(filepath.Separator),
			"github.com/dynamo-go/dynamo/cmd/frontend", "github.com/dynamo-go/dynamo/cmd/mocker", "github.com/dynamo-go/dynamo/cmd/worker",
			"github.com/dynamo-go/dynamo/cmd/bench")
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: go build: %v\n%s", err, out)
			return 1
		}
		frontendBin = filepath.Join(dir, "frontend")
		mockerBin = filepath.Join(dir, "mocker")
		workerBin = filepath.Join(dir, "worker")
		benchBin = filepath.Join(dir, "bench")
		return m.Run()
	}()
	if code == 0 {
		// Every process and connection a test starts is closed by its
		// cleanups; what is left is the embedded servers' process-wide
		// goroutines.
		if err := goleak.Find(
			goleak.IgnoreAnyFunction("go.etcd.io/etcd/pkg/v3/schedule.(*fifo).run"),
			goleak.IgnoreTopFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
			goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
			goleak.IgnoreAnyFunction("github.com/nats-io/nats-server/v2/server.(*Server).startGoRoutine.func1"),
		); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: leaked goroutines:", err)
			code = 1
		}
	}
	os.Exit(code)
}
