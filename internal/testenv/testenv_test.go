package testenv

import (
	"context"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestEtcdRestartKeepsData(t *testing.T) {
	e := StartEtcd(t)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{e.URL}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	e.Stop()
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("after restart got %v, want k=v", resp.Kvs)
	}
}

func TestNATSRestartReconnects(t *testing.T) {
	n := StartNATS(t)
	reconnected := make(chan struct{}, 1)
	nc, err := nats.Connect(n.URL, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond),
		nats.ReconnectHandler(func(*nats.Conn) { reconnected <- struct{}{} }))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	n.Stop()
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-reconnected:
	case <-time.After(10 * time.Second):
		t.Fatal("client did not reconnect after NATS restart")
	}
}

// TestAddressesAreNotPickedInAdvance checks where the servers listen:
// etcd on a unix socket of its own (two servers, two sockets), NATS on
// 127.0.0.1 on the port the kernel gave it.
func TestAddressesAreNotPickedInAdvance(t *testing.T) {
	a, b := StartEtcd(t), StartEtcd(t)
	if !strings.HasPrefix(a.URL, "unix:///") || a.URL == b.URL {
		t.Errorf("etcd URLs %q and %q: want two unix sockets", a.URL, b.URL)
	}
	for _, e := range []*Etcd{a, b} {
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{e.URL}, DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		_, err = cli.Put(ctx, "k", e.URL)
		cancel()
		cli.Close()
		if err != nil {
			t.Errorf("put to %s: %v", e.URL, err)
		}
	}
	n := StartNATS(t)
	u, err := url.Parse(n.URL)
	if err != nil {
		t.Fatal(err)
	}
	if host, port, _ := net.SplitHostPort(u.Host); u.Scheme != "nats" || host != "127.0.0.1" || port == "" || port == "0" || strings.HasPrefix(port, "-") {
		t.Errorf("NATS URL %q: want nats://127.0.0.1:<bound port>", n.URL)
	}
}
