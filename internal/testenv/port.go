package testenv

import (
	"net"
	"testing"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
//
// Nothing keeps it free: any process on the machine may take it before
// the caller binds it. Use it only for an address that must refuse
// connections. A server a test starts, in the test process or as a
// child, binds port 0 and reports the address it got.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testenv: find free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
