package runtime_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// TestMain doubles as a worker process: with RUNTIME_TEST_WORKER=1 the
// test binary serves the counting handler and blocks until signalled. The
// crash tests start it with startWorkerProcess and SIGKILL it.
func TestMain(m *testing.M) {
	if os.Getenv("RUNTIME_TEST_WORKER") == "1" {
		os.Exit(runWorkerProcess())
	}
	goleak.VerifyTestMain(m,
		// The embedded etcd server and the gRPC/NATS libraries keep a few
		// process-wide goroutines of their own.
		goleak.IgnoreAnyFunction("go.etcd.io/etcd/pkg/v3/schedule.(*fifo).run"),
		goleak.IgnoreTopFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
		goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
		goleak.IgnoreAnyFunction("github.com/nats-io/nats-server/v2/server.(*Server).startGoRoutine.func1"),
	)
}

func runWorkerProcess() int {
	ttl, _ := time.ParseDuration(os.Getenv("RUNTIME_TEST_TTL"))
	cfg := runtime.Config{
		Discovery:          os.Getenv("RUNTIME_TEST_DISCOVERY"),
		RequestPlane:       os.Getenv("RUNTIME_TEST_PLANE"),
		FileDir:            os.Getenv("RUNTIME_TEST_FILE_DIR"),
		NATSServer:         os.Getenv("RUNTIME_TEST_NATS"),
		LeaseTTL:           ttl,
		TCPHost:            "127.0.0.1",
		ResponseStreamHost: "127.0.0.1",
		SystemPort:         runtime.SystemPortDisabled,
	}
	if e := os.Getenv("RUNTIME_TEST_ETCD"); e != "" {
		cfg.EtcdEndpoints = []string{e}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	rt, err := runtime.New(ctx, cfg, runtime.Deps{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	go func() { _ = rt.Run(ctx) }()
	go func() {
		// Serve returns when ctx ends; Run then closes the runtime.
		_ = rt.Endpoint(testEndpoint).Serve(ctx, newCounter())
	}()
	fmt.Printf("ready %x\n", rt.InstanceID())
	<-ctx.Done()
	time.Sleep(time.Second)
	return 0
}

// workerProcess is a worker in its own OS process.
type workerProcess struct {
	cmd *exec.Cmd
	id  uint64
}

func startWorkerProcess(t *testing.T, c *cluster) *workerProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append(c.env(), "RUNTIME_TEST_WORKER=1")...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			if strings.HasPrefix(s.Text(), "ready ") {
				line <- strings.TrimPrefix(s.Text(), "ready ")
			}
		}
	}()
	select {
	case l := <-line:
		id, err := strconv.ParseUint(l, 16, 64)
		if err != nil {
			t.Fatalf("worker printed %q", l)
		}
		return &workerProcess{cmd: cmd, id: id}
	case <-time.After(60 * time.Second):
		t.Fatal("worker process did not start within 60s")
		return nil
	}
}
