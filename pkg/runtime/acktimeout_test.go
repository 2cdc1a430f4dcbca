package runtime_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// A worker that is alive but does not accept a request in time (here a
// worker process stopped with SIGSTOP: its kernel keeps its connections
// open and acknowledges what it is sent, its process answers nothing) is
// busy, not gone: the request whose ack timed out fails with
// ErrAckTimeout, an overload error that is no instance fault, so a router
// keeps the worker; the requests sent to it meanwhile are answered once
// it runs again. A worker that died (SIGKILL) is still an instance fault.
func TestSlowAckIsOverloadNotDeath(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	forEach(t, []setup{{runtime.DiscoveryEtcd, runtime.PlaneTCP}, {runtime.DiscoveryEtcd, runtime.PlaneNATS}}, func(t *testing.T, c *cluster) {
		const ackTimeout = 3 * time.Second
		cfg := c.config()
		cfg.TCPAckTimeout, cfg.NATSRequestTimeout = ackTimeout, ackTimeout
		caller := startRuntime(t, cfg, c.mem)
		w := startWorkerProcess(t, c)
		cl := client(t, caller, 1)
		if _, err := collect(runtime.NewContext(t.Context(), ""), cl, w.id, countRequest{N: 3}, nil); err != nil {
			t.Fatalf("a call before the stall: %v", err)
		}

		if err := w.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, 5*time.Second, "the worker process to stop", func() bool { return processState(w.cmd.Process.Pid) == 'T' })
		stalled := make(chan error, 1)
		go func() {
			_, err := collect(runtime.NewContext(t.Context(), ""), cl, w.id, countRequest{N: 3}, nil)
			stalled <- err
		}()
		// More requests while it is stopped: on TCP they share the
		// stalled request's connections (a pool of at most 4).
		time.Sleep(ackTimeout * 2 / 3)
		const others = 6
		var wg sync.WaitGroup
		errs := make([]error, others)
		got := make([][]int, others)
		for i := range others {
			wg.Go(func() {
				got[i], errs[i] = collect(runtime.NewContext(t.Context(), ""), cl, w.id, countRequest{N: 5}, nil)
			})
		}
		err := <-stalled
		if !errors.Is(err, runtime.ErrAckTimeout) || !errors.Is(err, runtime.ErrWorkerOverloaded) || runtime.IsInstanceFault(err) {
			t.Fatalf("the call to the stopped worker = %v, want ErrAckTimeout and WorkerOverloaded, no instance fault", err)
		}
		if !slices.Contains(cl.Available(), w.id) {
			t.Fatal("the stopped worker left the available instances")
		}
		if err := w.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		for i := range others {
			if errs[i] != nil {
				t.Fatalf("a call sent while the worker was stopped = %v, want answered once it runs again", errs[i])
			}
			checkSequence(t, got[i], 5)
		}
		if _, err := collect(runtime.NewContext(t.Context(), ""), cl, w.id, countRequest{N: 3}, nil); err != nil {
			t.Fatalf("a call after the stall: %v", err)
		}

		// A dead worker, still registered (its lease has not expired), is
		// an instance fault: the router reports it down. (On NATS, once
		// the server has seen the worker's connection close: a request
		// it delivered just before goes unanswered.)
		if err := w.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = w.cmd.Wait()
		if c.plane == runtime.PlaneNATS {
			waitInterest(t, c.nats.URL, runtime.NATSSubject(testEndpoint, w.id), false)
		}
		start := time.Now()
		_, err = collect(runtime.NewContext(t.Context(), ""), cl, w.id, countRequest{N: 3}, nil)
		if !errors.Is(err, runtime.ErrCannotConnect) || !runtime.IsInstanceFault(err) || errors.Is(err, runtime.ErrAckTimeout) {
			t.Fatalf("a call to the killed worker = %v, want CannotConnect (an instance fault)", err)
		}
		if d := time.Since(start); d >= ackTimeout {
			t.Errorf("the call to the killed worker failed after %v, want at once (not an ack timeout)", d)
		}
	})
}

// processState is the state letter of process pid in /proc (R, S, T for
// stopped, ...), or 0 when it cannot be read.
func processState(pid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// pid (comm) state ...: comm may hold spaces; the state follows the
	// last ')'.
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
		return b[i+2]
	}
	return 0
}
