package discovery_test

import (
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/runtime/discovery"
)

// TestNewEtcdDoesNotRetryTLSFailures checks that NewEtcd ends at once with
// ErrTLS when the TLS handshake fails, although the gRPC client reports
// such a failure only as a connection that never becomes ready ("context
// deadline exceeded"): NewEtcd shakes hands itself first.
func TestNewEtcdDoesNotRetryTLSFailures(t *testing.T) {
	t.Parallel()
	ca, other := testenv.NewCA(t), testenv.NewCA(t)
	server, client := ca.Server(t), ca.Issue(t, "client")
	etcd := testenv.StartEtcdWith(t, testenv.EtcdOptions{TLS: &server, ClientCertAuth: true})
	plain := httptest.NewServer(http.NotFoundHandler()) // speaks HTTP, not TLS
	t.Cleanup(plain.Close)
	for _, tc := range []struct {
		name     string
		endpoint string
		tls      *tls.Config
		want     string
	}{
		{"untrusted server", etcd.URL, testenv.ClientTLS(t, other.File, &client), "x509: certificate signed by unknown authority"},
		{"no client certificate", etcd.URL, testenv.ClientTLS(t, ca.File, nil), "remote error: tls: certificate required"},
		{"not a TLS server", strings.Replace(plain.URL, "http://", "https://", 1), testenv.ClientTLS(t, ca.File, nil), "does not speak TLS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			s, err := discovery.NewEtcd(t.Context(), discovery.EtcdConfig{Endpoints: []string{tc.endpoint}, TLS: tc.tls})
			if err == nil {
				s.Close()
				t.Fatal("NewEtcd succeeded")
			}
			if !errors.Is(err, discovery.ErrTLS) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewEtcd: %v, want ErrTLS and %q", err, tc.want)
			}
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("NewEtcd took %s to fail: it retried", took)
			}
		})
	}
}
