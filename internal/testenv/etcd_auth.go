package testenv

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// ClientTLS returns a TLS configuration that trusts the server's CA and
// presents the server's own certificate as a client certificate (it is
// valid for both), for a test that plays an operator. It returns nil
// without TLS.
func (e *Etcd) ClientTLS() (*tls.Config, error) {
	c := e.opts.TLS
	if c == nil {
		return nil, nil
	}
	tlsInfo := transportInfo(c)
	cfg, err := tlsInfo.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("etcd client TLS: %w", err)
	}
	return cfg, nil
}

// enableAuth creates the root user and opts.Users, each with a role that
// may read and write every key (or those under opts.Prefix), and turns
// authentication on.
func (e *Etcd) enableAuth() error {
	tlsCfg, err := e.ClientTLS()
	if err != nil {
		return err
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{e.URL},
		DialTimeout: 5 * time.Second,
		TLS:         tlsCfg,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return fmt.Errorf("etcd auth: %w", err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	steps := []func() error{
		func() error { _, err := cli.UserAdd(ctx, "root", rand.Text()); return err },
		func() error { _, err := cli.UserGrantRole(ctx, "root", "root"); return err },
	}
	for name, password := range e.opts.Users {
		steps = append(steps,
			func() error { _, err := cli.UserAdd(ctx, name, password); return err },
			func() error { _, err := cli.RoleAdd(ctx, name); return err },
			func() error {
				// From "\x00" to the end: every key.
				key, end := "\x00", "\x00"
				if p := e.opts.Prefix; p != "" {
					key, end = p, clientv3.GetPrefixRangeEnd(p)
				}
				_, err := cli.RoleGrantPermission(ctx, name, key, end, clientv3.PermissionType(clientv3.PermReadWrite))
				return err
			},
			func() error { _, err := cli.UserGrantRole(ctx, name, name); return err },
		)
	}
	steps = append(steps, func() error { _, err := cli.AuthEnable(ctx); return err })
	for _, step := range steps {
		if err := step(); err != nil {
			return fmt.Errorf("etcd auth: %w", err)
		}
	}
	return nil
}
