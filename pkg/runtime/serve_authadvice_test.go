package runtime_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// An etcd user without write access to the instance keys: Serve's
// registration error and the discovery watch's warning name the settings
// to check, not only "etcdserver: permission denied".
func TestRegisterAndWatchRefusalsSayWhatToCheck(t *testing.T) {
	t.Parallel()
	etcd := testenv.StartEtcdWith(t, testenv.EtcdOptions{Users: map[string]string{"dynamo": "etcd-secret"}, Prefix: "elsewhere/"})
	cfg := baseConfig()
	cfg.Discovery, cfg.EtcdEndpoints = runtime.DiscoveryEtcd, []string{etcd.URL}
	cfg.EtcdUsername, cfg.EtcdPassword = "dynamo", "etcd-secret"
	var logs testenv.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	rt, err := runtime.New(t.Context(), cfg, runtime.Deps{Logger: log})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer rt.Close()

	err = rt.Endpoint(testEndpoint).Serve(t.Context(), newCounter())
	if err == nil || !strings.Contains(err.Error(), "runtime: register") || !strings.Contains(err.Error(), "ETCD_AUTH_USERNAME") {
		t.Errorf("Serve: %v; want the registration's refusal with the settings to check", err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		_, _ = rt.Endpoint(testEndpoint).Client(ctx)
	}()
	defer func() { cancel(); <-watched }()
	testenv.WaitFor(t, 10*time.Second, "the watch's warning", func() bool {
		return strings.Contains(logs.String(), "discovery watch failed")
	})
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "discovery watch failed") && !strings.Contains(line, `advice="etcd refused the request for lack of permission`) {
			t.Errorf("the watch's warning has no advice: %s", line)
		}
	}
}
