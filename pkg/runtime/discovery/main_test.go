package discovery_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: the
// stores' watch goroutines must end with Close or their ctx, and the
// embedded etcd servers and clients are stopped by t.Cleanup.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
