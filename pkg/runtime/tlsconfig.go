package runtime

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
)

// etcdTLS returns the TLS configuration for etcd: nil for plain
// connections, else the configured files, or the system's roots for an
// https:// endpoint with none.
func (c Config) etcdTLS() (*tls.Config, error) {
	secure := false
	for _, ep := range c.EtcdEndpoints {
		secure = secure || strings.HasPrefix(ep, "https://") || strings.HasPrefix(ep, "unixs://")
	}
	cfg, err := c.EtcdTLS.clientConfig(secure, "ETCD_AUTH_CA", "ETCD_AUTH_CLIENT_CERT / ETCD_AUTH_CLIENT_KEY")
	if err != nil {
		return nil, fmt.Errorf("runtime: etcd TLS: %w", err)
	}
	return cfg, nil
}

// natsTLS is the same for NATS, whose tls:// URLs ask for TLS.
func (c Config) natsTLS() (*tls.Config, error) {
	secure := strings.Contains(c.NATSServer, "tls://")
	cfg, err := c.NATSTLS.clientConfig(secure, "NATS_TLS_CA", "NATS_TLS_CERT / NATS_TLS_KEY")
	if err != nil {
		return nil, fmt.Errorf("runtime: nats TLS: %w", err)
	}
	return cfg, nil
}

// clientConfig loads the files into a TLS client configuration. It
// returns nil when no file is named and secure is false. caVar and
// certVars name the settings in errors.
func (f TLSFiles) clientConfig(secure bool, caVar, certVars string) (*tls.Config, error) {
	if f.IsZero() && !secure {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.CAFile != "" {
		pem, err := os.ReadFile(f.CAFile)
		if err != nil {
			return nil, fmt.Errorf("CA file (%s): %w", caVar, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s (%s): no PEM certificate in it", f.CAFile, caVar)
		}
		cfg.RootCAs = pool
	}
	if f.CertFile != "" || f.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("client certificate (%s): %w", certVars, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
