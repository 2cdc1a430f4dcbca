package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// TestEtcdTLSAndAuth checks an etcd server with mutual TLS and
// authentication: a user with the right certificate and password may
// write, one without a password may not, and a restart keeps the address.
func TestEtcdTLSAndAuth(t *testing.T) {
	t.Parallel()
	ca := NewCA(t)
	server, client := ca.Server(t), ca.Issue(t, "client")
	e := StartEtcdWith(t, EtcdOptions{TLS: &server, ClientCertAuth: true, Users: map[string]string{"dynamo": "pw"}})
	url := e.URL
	put := func(user, password string) error {
		cli, err := clientv3.New(clientv3.Config{
			Endpoints: []string{e.URL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
			TLS: ClientTLS(t, ca.File, &client), Username: user, Password: password,
		})
		if err != nil {
			return err
		}
		defer cli.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		_, err = cli.Put(ctx, "k", "v")
		return err
	}
	if err := put("dynamo", "pw"); err != nil {
		t.Fatalf("put as dynamo: %v", err)
	}
	if err := put("", ""); err == nil {
		t.Fatal("put without a user succeeded: authentication is off")
	}
	e.Stop()
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	if e.URL != url {
		t.Fatalf("URL after restart = %s, want %s", e.URL, url)
	}
	if err := put("dynamo", "pw"); err != nil {
		t.Fatalf("put after restart: %v", err)
	}
}

// TestNATSTLSAndCredentials checks a NATS server with TLS in operator
// mode: the credentials file it hands out connects, nothing else does.
func TestNATSTLSAndCredentials(t *testing.T) {
	t.Parallel()
	ca := NewCA(t)
	server := ca.Server(t)
	n := StartNATSWith(t, NATSOptions{TLS: &server, Operator: true})
	tlsCfg := ClientTLS(t, ca.File, nil)
	nc, err := nats.Connect(n.URL, nats.Secure(tlsCfg), nats.UserCredentials(n.CredentialsFile))
	if err != nil {
		t.Fatalf("connect with credentials: %v", err)
	}
	nc.Close()
	if nc, err := nats.Connect(n.URL, nats.Secure(tlsCfg)); err == nil {
		nc.Close()
		t.Fatal("connect without credentials succeeded")
	}
}
