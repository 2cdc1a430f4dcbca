package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/backend/worker"
	"github.com/dynamo-go/dynamo/pkg/kvblock"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/runtime/discovery"
	"github.com/dynamo-go/dynamo/pkg/runtime/runtimetest"
)

// publishedCard runs a worker in mode and returns its verified card.
func publishedCard(t *testing.T, mode string, eng backend.Engine) *modelcard.Card {
	t.Helper()
	h := newHarness(t, eng, worker.Config{DisaggregationMode: mode, MigrationLimit: 2})
	h.connect(t)
	kvs, err := h.caller.Store().List(t.Context(), "v1/mdc/test/backend/generate/")
	if err != nil || len(kvs) != 1 {
		t.Fatalf("model cards = %d, %v; want 1", len(kvs), err)
	}
	return decodeCard(t, kvs[0].Value)
}

func TestCardPerRole(t *testing.T) {
	agg := publishedCard(t, worker.ModeAggregated, &scripted{})
	decode := publishedCard(t, worker.ModeDecode, &scripted{})
	prefill := publishedCard(t, worker.ModePrefill, &scripted{bootstrapPort: 4567})
	sync := publishedCard(t, worker.ModePrefill, &scripted{})

	for _, tc := range []struct {
		name string
		card *modelcard.Card
		typ  modelcard.ModelType
		wt   modelcard.WorkerType
		ep   *modelcard.DisaggregatedEndpoint
	}{
		{"aggregated", agg, modelcard.ModelChat | modelcard.ModelCompletions, modelcard.WorkerAggregated, nil},
		{"decode", decode, modelcard.ModelChat | modelcard.ModelCompletions, modelcard.WorkerDecode, nil},
		{"prefill with bootstrap", prefill, modelcard.ModelPrefill, modelcard.WorkerPrefill,
			&modelcard.DisaggregatedEndpoint{BootstrapHost: "127.0.0.1", BootstrapPort: 4567}},
		{"prefill, synchronous", sync, modelcard.ModelPrefill, modelcard.WorkerPrefill, nil},
	} {
		c := tc.card
		if c.ModelType != tc.typ || c.WorkerType != tc.wt || c.DisplayName != "scripted-model" {
			t.Errorf("%s: model type %v, worker type %v, name %q; want %v, %v, scripted-model", tc.name, c.ModelType, c.WorkerType, c.DisplayName, tc.typ, tc.wt)
		}
		got := c.RuntimeConfig.DisaggregatedEndpoint
		if (got == nil) != (tc.ep == nil) || got != nil && *got != *tc.ep {
			t.Errorf("%s: disaggregated_endpoint %+v, want %+v", tc.name, got, tc.ep)
		}
		if c.MDCSum != agg.MDCSum {
			t.Errorf("%s: mdc_sum %s differs from the aggregated card's %s", tc.name, c.MDCSum, agg.MDCSum)
		}
	}
}

// A worker that is not a prefill worker does not advertise a bootstrap
// port its engine reports.
func TestBootstrapPortOnlyForPrefill(t *testing.T) {
	if c := publishedCard(t, worker.ModeDecode, &scripted{bootstrapPort: 4567}); c.RuntimeConfig.DisaggregatedEndpoint != nil {
		t.Fatalf("decode card has disaggregated_endpoint %+v", c.RuntimeConfig.DisaggregatedEndpoint)
	}
}

// loadEngine is a kvEngine that also publishes its load after each KV
// event.
type loadEngine struct{ kvEngine }

func (e *loadEngine) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	err := e.kvEngine.Generate(ctx, req, emit)
	if perr := e.pub.PublishLoad(ctx, 0, kvblock.LoadEvent{WorkerID: e.id}); perr != nil && err == nil {
		err = perr
	}
	return err
}

// On the NATS event plane, a decode worker publishes its engine's load
// metrics but not its KV events; an aggregated one publishes both.
func TestDecodeWorkerPublishesNoKVEvents(t *testing.T) {
	nc := testenv.StartNATS(t)
	for _, tc := range []struct {
		mode   string
		wantKV bool
	}{{worker.ModeDecode, false}, {worker.ModeAggregated, true}, {worker.ModePrefill, true}} {
		t.Run(tc.mode, func(t *testing.T) {
			sub, err := nats.Connect(nc.URL)
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			kv, load := make(chan *nats.Msg, 16), make(chan *nats.Msg, 16)
			if _, err := sub.ChanSubscribe(kvblock.KVEventsSubject("test", "backend"), kv); err != nil {
				t.Fatal(err)
			}
			if _, err := sub.ChanSubscribe(kvblock.LoadMetricsSubject("test"), load); err != nil {
				t.Fatal(err)
			}
			if err := sub.Flush(); err != nil {
				t.Fatal(err)
			}

			mem := discovery.NewMemSpace()
			cfg := runtime.Config{Discovery: runtime.DiscoveryMem, RequestPlane: runtime.PlaneNATS, NATSServer: nc.URL,
				TCPHost: "127.0.0.1", SystemPort: runtime.SystemPortDisabled, GracePeriod: 100 * time.Millisecond}
			h := &harness{runErr: make(chan error, 1)}
			h.worker = runtimetest.Start(t, cfg, runtime.Deps{MemSpace: mem})
			h.caller = runtimetest.Start(t, cfg, runtime.Deps{MemSpace: mem})
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				h.runErr <- worker.Run(ctx, h.worker, &loadEngine{}, worker.Config{Endpoint: testEP, ModelPath: demoModel, DisaggregationMode: tc.mode})
			}()
			t.Cleanup(func() { cancel(); <-h.runErr })
			h.connect(t)
			if _, err := h.generate(runtime.NewContext(t.Context(), ""), request(1), nil); err != nil {
				t.Fatal(err)
			}
			select {
			case <-load:
			case <-time.After(10 * time.Second):
				t.Fatal("no load metrics within 10 s")
			}
			// The KV event was published before the load, on the same
			// connection: it has arrived if it was sent.
			_ = sub.Flush()
			select {
			case <-kv:
				if !tc.wantKV {
					t.Fatal("a decode worker published a KV event")
				}
			default:
				if tc.wantKV {
					t.Fatal("no KV event from a worker that should publish them")
				}
			}
		})
	}
}
