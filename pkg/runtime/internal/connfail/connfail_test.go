package connfail

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want Problem // 0: not permanent
	}{
		{"nil", nil, 0},
		{"refused", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}, 0},
		{"deadline", fmt.Errorf("grant: %w", errors.New("context deadline exceeded")), 0},
		{"unknown authority", fmt.Errorf("nats: %w", &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), UntrustedServer},
		{"wrong host", &tls.CertificateVerificationError{Err: x509.HostnameError{Certificate: &x509.Certificate{}, Host: "etcd"}}, WrongHost},
		{"expired", x509.CertificateInvalidError{Reason: x509.Expired}, UntrustedServer},
		{"plain server", tls.RecordHeaderError{Msg: "tls: first record does not look like a TLS handshake"}, NotTLS},
		{"alert", &net.OpError{Op: "remote error", Err: errors.New("tls: certificate required")}, RefusedByServer},
		{"gRPC text, untrusted", errors.New(`rpc error: code = Unavailable desc = connection error: desc = "transport: authentication handshake failed: tls: failed to verify certificate: x509: certificate signed by unknown authority"`), UntrustedServer},
		{"gRPC text, wrong host", errors.New(`transport: authentication handshake failed: x509: certificate is valid for localhost, not etcd`), WrongHost},
		{"gRPC text, alert", errors.New(`connection error: desc = "error reading server preface: remote error: tls: bad certificate"`), RefusedByServer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Classify(tc.err)
			switch {
			case tc.want == 0 && got != nil:
				t.Fatalf("Classify = %v, want nil", got)
			case tc.want != 0 && (got == nil || got.Problem != tc.want):
				t.Fatalf("Classify = %v, want problem %d", got, tc.want)
			case got != nil && (!errors.Is(got, ErrTLS) || !errors.Is(got, tc.err)):
				t.Fatalf("%v does not match ErrTLS and its cause", got)
			}
		})
	}
	auth := &Error{Problem: BadCredentials, Err: errors.New("etcdserver: authentication failed")}
	if !errors.Is(auth, ErrAuthFailed) || errors.Is(auth, ErrTLS) || auth.Error() != "authentication failed: etcdserver: authentication failed" {
		t.Fatalf("credentials error %q", auth)
	}
}

func TestCheckTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	trusted := &tls.Config{RootCAs: x509.NewCertPool()}
	trusted.RootCAs.AddCert(srv.Certificate())
	const timeout = 500 * time.Millisecond

	if err := CheckTLS(t.Context(), addr, trusted, []byte("GET / HTTP/1.0\r\n\r\n"), timeout); err != nil {
		t.Errorf("trusted server: %v", err)
	}
	if err := CheckTLS(t.Context(), addr, trusted, nil, timeout); err != nil {
		t.Errorf("trusted server that waits for the client: %v", err)
	}
	if err := CheckTLS(t.Context(), addr, &tls.Config{}, nil, timeout); err == nil || err.Problem != UntrustedServer {
		t.Errorf("untrusted server: %v", err)
	}
	named := trusted.Clone()
	named.ServerName = "etcd.invalid"
	if err := CheckTLS(t.Context(), addr, named, nil, timeout); err == nil || err.Problem != WrongHost {
		t.Errorf("wrong host: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	if err := CheckTLS(t.Context(), closed, trusted, nil, timeout); err != nil {
		t.Errorf("unreachable server: %v, want nil (retry)", err)
	}
}
