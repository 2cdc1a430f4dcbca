package main

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// With HELLO_RUN_MAIN=1 the test binary is the hello command itself, so the
// test below can run "hello serve" and "hello call" as real processes.
func TestMain(m *testing.M) {
	if os.Getenv("HELLO_RUN_MAIN") == "1" {
		os.Exit(run(os.Args[len(os.Args)-countArgs():]))
	}
	os.Exit(m.Run())
}

func countArgs() int {
	for i, a := range os.Args {
		if a == "--" {
			return len(os.Args) - i - 1
		}
	}
	return 0
}

func hello(t *testing.T, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), append(env, "HELLO_RUN_MAIN=1")...)
	return cmd
}

func TestServeAndCallInTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	env := []string{"DYN_FILE_KV=" + t.TempDir(), "DYN_DISCOVERY_BACKEND=file", "DYN_TCP_RPC_HOST=127.0.0.1",
		"DYN_GRACEFUL_SHUTDOWN_GRACE_PERIOD_SECS=0"}
	server := hello(t, env, "serve")
	server.Stderr = os.Stderr
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- server.Wait() }()
	t.Cleanup(func() { _ = server.Process.Kill() })

	out, err := hello(t, env, "call", "Alice").Output()
	if err != nil {
		t.Fatalf("hello call: %v", err)
	}
	if got, want := strings.TrimSpace(string(out)), "Hello, Alice! Greetings from a streaming endpoint."; got != want {
		t.Fatalf("reply = %q, want %q", got, want)
	}
	// SIGTERM: the server unregisters, drains and exits 0.
	_ = server.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("server exit after SIGTERM: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("server did not exit within 20s of SIGTERM")
	}
	entries, _ := os.ReadDir(strings.TrimPrefix(env[0], "DYN_FILE_KV="))
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			t.Errorf("discovery entry %s left behind after a clean shutdown", e.Name())
		}
	}
}

func TestBadFlagsExitTwo(t *testing.T) {
	err := hello(t, nil, "serve", "--request-plane", "carrier-pigeon").Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("bad --request-plane: %v, want exit status 2", err)
	}
}
