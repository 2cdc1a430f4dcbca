package main

import (
	"encoding/json"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/runtime/runtimetest"
)

func TestBootstrapPortsFlag(t *testing.T) {
	for _, tc := range []struct {
		value   string
		workers int
		want    []int // per worker; nil: none
		err     string
	}{
		{"", 2, nil, ""},
		{"7000", 3, []int{7000, 7001, 7002}, ""},
		{"0", 2, []int{0, 0}, ""},
		{"7000, 7100", 2, []int{7000, 7100}, ""},
		{"7000,7100", 3, nil, "2 ports for 3 workers"},
		{"65535", 2, nil, "beyond 65535"},
		{"x", 1, nil, "want a port"},
	} {
		m, err := parseMocker(t, nil, "--bootstrap-ports", tc.value, "--num-workers", strconv.Itoa(tc.workers))
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = m.config()
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, want %q", tc.value, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tc.value, err)
		}
		for i := range tc.workers {
			p, ok := m.bootstrapPort(i)
			if ok != (tc.want != nil) || ok && p != tc.want[i] {
				t.Errorf("%q worker %d: port %d, %v; want %v", tc.value, i, p, ok, tc.want)
			}
		}
	}
}

func TestKVTransferFlags(t *testing.T) {
	m, err := parseMocker(t, map[string]string{"DYN_MOCKER_KV_TRANSFER_BANDWIDTH": "8"}, "--kv-bytes-per-token", "4096")
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := m.config()
	if err != nil || c.KVTransferBandwidth != 8 || c.KVBytesPerToken != 4096 {
		t.Fatalf("bandwidth %v, bytes %d, %v; want 8 (env), 4096", c.KVTransferBandwidth, c.KVBytesPerToken, err)
	}
	m, _ = parseMocker(t, nil)
	if c, _, _ := m.config(); c.KVTransferBandwidth != 64 || c.KVBytesPerToken != 0 {
		t.Fatalf("defaults: bandwidth %v, bytes %d; want 64, 0 (from the model)", c.KVTransferBandwidth, c.KVBytesPerToken)
	}
	for _, args := range [][]string{
		{"--kv-transfer-bandwidth", "-1"}, {"--kv-bytes-per-token", "-5"}, {"--kv-cache-dtype", "int4"},
	} {
		m, _ := parseMocker(t, nil, args...)
		if _, _, err := m.config(); err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(args[0], "--")) {
			t.Errorf("%v: %v, want an error naming the flag", args, err)
		}
	}
}

// A prefill mocker process with --bootstrap-ports 0 and two workers
// registers two Prefill cards on the prefill endpoint, each with its own
// bootstrap port on the advertised host; a decode mocker registers a
// Decode card; all share one mdc_sum. A request handed over through the
// bootstrap server completes on the decode worker.
func TestPrefillAndDecodeMockerProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	etcd := testenv.StartEtcd(t)
	env := []string{"ETCD_ENDPOINTS=" + etcd.URL, "DYN_TCP_RPC_HOST=127.0.0.1", "DYN_LOG=warn",
		"DYN_GRACEFUL_SHUTDOWN_GRACE_PERIOD_SECS=0"}
	common := []string{"--model-path", "../../models/demo", "--speedup-ratio", "50"}
	startMocker(t, env, append(common, "--disaggregation-mode", "prefill", "--bootstrap-ports", "0", "--num-workers", "2", "--kv-bytes-per-token", "100000")...)
	startMocker(t, env, append(common, "--is-decode-worker")...)

	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{etcd.URL}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	testenv.WaitFor(t, 30*time.Second, "two prefill cards and a decode card", func() bool {
		return len(keys(t, cli, "v1/mdc/dynamo/prefill/generate/")) == 2 && len(keys(t, cli, "v1/mdc/dynamo/backend/generate/")) == 1
	})
	resp, err := cli.Get(t.Context(), "v1/mdc/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]bool{}
	var prefillID uint64
	var boot *modelcard.DisaggregatedEndpoint
	ports := map[int]bool{}
	for _, kv := range resp.Kvs {
		rec, err := modelcard.DecodeRecord(kv.Value)
		if err != nil {
			t.Fatal(err)
		}
		card, err := rec.DecodeCard()
		if err != nil {
			t.Fatal(err)
		}
		sums[card.MDCSum] = true
		ep := card.RuntimeConfig.DisaggregatedEndpoint
		switch rec.Component {
		case "prefill":
			if card.ModelType != modelcard.ModelPrefill || card.WorkerType != modelcard.WorkerPrefill || ep == nil || ep.BootstrapHost != "127.0.0.1" || ep.BootstrapPort == 0 {
				t.Fatalf("prefill card: model type %v, worker type %v, disaggregated_endpoint %+v", card.ModelType, card.WorkerType, ep)
			}
			ports[ep.BootstrapPort] = true
			prefillID, boot = rec.InstanceID, ep
		default:
			if card.ModelType != modelcard.ModelChat|modelcard.ModelCompletions || card.WorkerType != modelcard.WorkerDecode || ep != nil {
				t.Fatalf("decode card: model type %v, worker type %v, disaggregated_endpoint %+v", card.ModelType, card.WorkerType, ep)
			}
		}
	}
	if len(sums) != 1 || len(ports) != 2 {
		t.Fatalf("mdc_sums %v (want one), bootstrap ports %v (want two)", sums, ports)
	}

	caller := runtimetest.Start(t, runtime.Config{EtcdEndpoints: []string{etcd.URL}, TCPHost: "127.0.0.1"}, runtime.Deps{})
	client := func(component string) *runtime.Client {
		cl, err := caller.Endpoint(runtime.EndpointID{Namespace: "dynamo", Component: component, Name: "generate"}).Client(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	pre, dec := client("prefill"), client("backend")
	testenv.WaitFor(t, 10*time.Second, "the caller to discover the workers", func() bool {
		return len(pre.InstanceIDs()) == 2 && len(dec.InstanceIDs()) == 1
	})
	call := func(cl *runtime.Client, id uint64, req backend.Request) ([]backend.Output, error) {
		b, _ := json.Marshal(req)
		var outs []backend.Output
		err := cl.Call(runtime.NewContext(t.Context(), ""), id, b, func(item []byte) error {
			var o backend.Output
			if err := json.Unmarshal(item, &o); err != nil {
				return err
			}
			outs = append(outs, o)
			return nil
		})
		return outs, err
	}
	info := &backend.BootstrapInfo{Host: boot.BootstrapHost, Port: boot.BootstrapPort, Room: 424242}
	req := backend.Request{Model: "demo", TokenIDs: []uint32{1, 2, 3, 4, 5, 6, 7, 8}, BootstrapInfo: info,
		StopConditions: backend.StopConditions{MaxTokens: backend.Ptr(uint32(6))}}
	decodeDone := make(chan []backend.Output, 1)
	go func() {
		outs, err := call(dec, dec.InstanceIDs()[0], req)
		if err != nil {
			t.Error(err)
		}
		decodeDone <- outs
	}()
	prefillOuts, err := call(pre, prefillID, req)
	if err != nil || len(prefillOuts) != 1 || len(prefillOuts[0].TokenIDs) != 1 || prefillOuts[0].DisaggregatedParams == nil {
		t.Fatalf("prefill: %+v, %v; want one output with a token and disaggregated_params", prefillOuts, err)
	}
	var params backend.DisaggregatedParams
	if err := json.Unmarshal(prefillOuts[0].DisaggregatedParams, &params); err != nil || params.WorkerID == nil || params.WorkerID.PrefillWorkerID != prefillID {
		t.Fatalf("disaggregated_params %s, want prefill_worker_id %d", prefillOuts[0].DisaggregatedParams, prefillID)
	}
	select {
	case outs := <-decodeDone:
		n := 0
		for _, o := range outs {
			n += len(o.TokenIDs)
		}
		if n != 6 || !outs[len(outs)-1].IsTerminal() {
			t.Fatalf("decode: %d tokens in %d outputs, want 6 and a terminal", n, len(outs))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("decode did not finish within 10 s of its prefill")
	}
	// The bootstrap port is a plain TCP listener on loopback.
	c, err := net.DialTimeout("tcp", net.JoinHostPort(boot.BootstrapHost, strconv.Itoa(boot.BootstrapPort)), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

func TestEngineArgsFileBootstrapAndTransfer(t *testing.T) {
	file := t.TempDir() + "/args.json"
	if err := writeFile(file, `{"is_prefill": true, "bootstrap_port": 9100, "kv_transfer_bandwidth": 16, "kv_bytes_per_token": 512}`); err != nil {
		t.Fatal(err)
	}
	m, err := parseMocker(t, nil, "--extra-engine-args", file, "--num-workers", "2")
	if err != nil {
		t.Fatal(err)
	}
	c, mode, err := m.config()
	if err != nil || mode != "prefill" || c.KVTransferBandwidth != 16 || c.KVBytesPerToken != 512 {
		t.Fatalf("config %+v mode %q, %v", c, mode, err)
	}
	if p, ok := m.bootstrapPort(1); !ok || p != 9101 {
		t.Fatalf("worker 1's bootstrap port %d, %v; want 9101", p, ok)
	}
}
