package discovery

import (
	"context"
	"errors"
	"net/url"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/connfail"
)

// Errors of NewEtcd that it does not retry: retrying cannot cure them.
var (
	// ErrAuthFailed: etcd refused the user name or password (or requires
	// one that was not given, or the user lacks permission).
	ErrAuthFailed = connfail.ErrAuthFailed
	// ErrTLS: the TLS handshake with etcd failed (untrusted server
	// certificate, client certificate refused or missing, no TLS server).
	ErrTLS = connfail.ErrTLS
)

// tlsCheckTimeout bounds one TLS check of an endpoint.
const tlsCheckTimeout = 2 * time.Second

// http2Preface is what a gRPC client sends first; etcd's server answers it,
// so a TLS check that sends it hears back at once.
var http2Preface = []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")

// permanent returns err as a *connfail.Error if it comes from connecting
// to etcd or granting the lease and retrying cannot cure it, nil otherwise.
func permanent(err error) *connfail.Error {
	var he *connfail.Error
	if errors.As(err, &he) {
		return he
	}
	switch {
	case errors.Is(err, rpctypes.ErrAuthFailed), errors.Is(err, rpctypes.ErrGRPCAuthFailed),
		errors.Is(err, rpctypes.ErrUserEmpty), errors.Is(err, rpctypes.ErrGRPCUserEmpty):
		return &connfail.Error{Problem: connfail.BadCredentials, Err: err}
	case errors.Is(err, rpctypes.ErrPermissionDenied), errors.Is(err, rpctypes.ErrGRPCPermissionDenied):
		return &connfail.Error{Problem: connfail.BadCredentials, Reason: "the user lacks permission", Err: err}
	}
	return connfail.Classify(err)
}

// checkNeedsUser returns a *connfail.Error if etcd has authentication
// enabled and cfg names no user: etcd grants a lease to anyone, but
// refuses every key written under it. Any other outcome, including an
// error, returns nil and leaves the verdict to the lease grant.
func checkNeedsUser(ctx context.Context, cli *clientv3.Client, cfg EtcdConfig) error {
	if cfg.Username != "" {
		return nil
	}
	resp, err := cli.AuthStatus(ctx)
	if err != nil || !resp.Enabled {
		return nil
	}
	return &connfail.Error{Problem: connfail.BadCredentials, Err: errors.New("etcd has authentication enabled and no user was given")}
}

// checkTLS shakes hands with every https endpoint that names its port,
// because the gRPC client
// reports a certificate problem only as a connection that never becomes
// ready. It returns a *connfail.Error for the first endpoint whose
// handshake failed for good, and nil if none did (unreachable endpoints
// are left to the retry loop).
func checkTLS(ctx context.Context, cfg EtcdConfig) error {
	if cfg.TLS == nil {
		return nil
	}
	for _, ep := range cfg.Endpoints {
		u, err := url.Parse(ep)
		if err != nil || u.Scheme != "https" || u.Port() == "" {
			continue
		}
		tlsCfg := cfg.TLS.Clone()
		if tlsCfg.ServerName == "" {
			tlsCfg.ServerName = u.Hostname()
		}
		tlsCfg.NextProtos = []string{"h2"} // as gRPC
		if he := connfail.CheckTLS(ctx, u.Host, tlsCfg, http2Preface, min(cfg.DialTimeout, tlsCheckTimeout)); he != nil {
			return he
		}
	}
	return nil
}
