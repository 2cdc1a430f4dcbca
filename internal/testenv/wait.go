package testenv

import (
	"testing"
	"time"
)

// WaitFor polls cond every 10 ms until it holds, failing the test with
// "timed out after d waiting for what" when it does not within d.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
