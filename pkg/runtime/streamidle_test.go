package runtime_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// The stream-idle hook runs whenever every item received so far has been
// delivered: after each item when items come one at a time, and once per
// batch when they pile up, so a consumer that flushes there sends a lone
// item at once and a burst in few writes.
func TestStreamIdleHook(t *testing.T) {
	c := newCluster(t, setup{runtime.DiscoveryMem, runtime.PlaneTCP})
	worker, caller := c.start(t), c.start(t)
	serve(t, worker, newCounter())
	cl := client(t, caller, 1)
	call := func(req countRequest, onItem func(int)) (items []int, idles int64) {
		t.Helper()
		var idle atomic.Int64
		parent := runtime.NewContext(t.Context(), "")
		defer parent.Release()
		parent.OnStreamIdle(func() { idle.Add(1) })
		// The call runs under a linked child, as a migration attempt does.
		rc := runtime.NewContext(parent, "")
		parent.LinkChild(rc)
		defer rc.Release()
		got, err := collect(rc, cl, worker.InstanceID(), req, onItem)
		if err != nil {
			t.Fatal(err)
		}
		return got, idle.Load()
	}

	// One at a time (5 ms apart): the hook runs after every item.
	got, idles := call(countRequest{N: 20, DelayUS: 5000}, nil)
	checkSequence(t, got, 20)
	if idles < 20 {
		t.Errorf("items 5 ms apart: the idle hook ran %d times for 20 items, want at least once after each", idles)
	}

	// A burst that piles up while the consumer is busy with the first item:
	// the hook runs far less often than once per item.
	got, idles = call(countRequest{N: 2000}, func(n int) {
		if n == 0 {
			time.Sleep(50 * time.Millisecond)
		}
	})
	checkSequence(t, got, 2000)
	if idles >= 1000 {
		t.Errorf("a burst of 2000 items: the idle hook ran %d times, want far fewer (items delivered together)", idles)
	}
	t.Logf("burst of 2000 items: the idle hook ran %d times", idles)
}
