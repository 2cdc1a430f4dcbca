package testenv

import (
	"context"
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
