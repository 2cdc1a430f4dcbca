package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// loraCards is the worker's side of its adapters: resolving their sources
// with the worker's hub settings, and publishing their cards (copies of
// the base card under the adapter's name) bound to the lease.
type loraCards struct {
	w    *server
	base *modelcard.Card
}

func (c loraCards) resolveLora(ctx context.Context, source string) (string, error) {
	return resolveLoraSource(ctx, c.w.cfg.Hub, source)
}

// publishLora writes adapter name's card under the base card's key plus
// modelcard.LoraSuffix(name), with the same store Put as the base card:
// the lease takes it away with the worker.
func (c loraCards) publishLora(ctx context.Context, name, source string) (string, error) {
	ep := c.w.cfg.Endpoint
	rec, err := modelcard.NewRecord(ep.Namespace, ep.Component, ep.Name, c.w.rt.InstanceID(), c.base.ForLora(name, source))
	if err != nil {
		return "", fmt.Errorf("adapter card: %w", err)
	}
	suffix := modelcard.LoraSuffix(name)
	rec.ModelSuffix = &suffix
	b, err := json.Marshal(rec)
	if err != nil {
		return "", fmt.Errorf("adapter card record: %w", err)
	}
	key := rec.Key()
	if err := c.w.rt.Store().Put(ctx, key, b); err != nil {
		return "", fmt.Errorf("publish adapter card: %w", err)
	}
	return key, nil
}

func (c loraCards) withdrawLora(ctx context.Context, key string) error {
	return c.w.rt.Store().Delete(ctx, key)
}

// serveLoras serves modelcard.LoraEndpoint beside the worker's endpoint
// until ctx ends; the returned function waits for it to stop.
func (w *server) serveLoras(ctx context.Context) (stop func()) {
	ep := w.cfg.Endpoint
	ep.Name = modelcard.LoraEndpoint
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := w.rt.Endpoint(ep).Serve(ctx, runtime.HandlerFunc(w.handleLora))
		if err != nil && !errors.Is(err, context.Canceled) {
			w.log.Error("worker: lora endpoint stopped; adapters cannot be loaded or unloaded here", "err", err)
		}
	}()
	return func() { <-done }
}

// handleLora answers one modelcard.LoraRequest with one
// modelcard.LoraResult: the adapters held after it.
func (w *server) handleLora(rc *runtime.Context, payload []byte, emit func([]byte) error) error {
	var req modelcard.LoraRequest
	if err := json.Unmarshal(payload, &req); err != nil {
		return runtime.NewError(backend.TypeInvalidArgument, "worker: bad lora request: %v", err)
	}
	var err error
	switch req.Op {
	case modelcard.LoraLoad:
		err = w.loras.load(rc, req.Name, req.Source)
	case modelcard.LoraUnload:
		err = w.loras.unload(rc, req.Name)
	case modelcard.LoraList:
	default:
		return runtime.NewError(backend.TypeInvalidArgument, "worker: lora op %q: want %s, %s or %s", req.Op, modelcard.LoraLoad, modelcard.LoraUnload, modelcard.LoraList)
	}
	if err != nil {
		w.log.Warn("worker: lora request failed", "op", req.Op, "lora_name", req.Name, "source", req.Source, "err", err)
		return flatten(err)
	}
	b, err := json.Marshal(w.loras.list())
	if err != nil {
		return err
	}
	return emit(b)
}

// flatten makes err one runtime error of the type it carries (else
// TypeUnknown) whose message is its text without the types the wrapping
// repeated: the reason a frontend shows its client.
func flatten(err error) *runtime.Error {
	t := backend.TypeUnknown
	var re *runtime.Error
	if errors.As(err, &re) {
		t = re.Type
	}
	msg := strings.ReplaceAll(err.Error(), string(t)+": ", "")
	msg = strings.TrimSuffix(msg, ": "+string(t))
	return runtime.NewError(t, "worker: %s", msg)
}

// loraMetrics are the worker's adapter metrics.
type loraMetrics struct {
	swaps        prometheus.Counter
	held, active prometheus.Gauge
}

func newLoraMetrics(reg prometheus.Registerer, ep runtime.EndpointID) (*loraMetrics, error) {
	labels := []string{runtime.LabelNamespace, runtime.LabelComponent, runtime.LabelEndpoint}
	swaps, err := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dynamo_worker_lora_swaps_total",
		Help: "LoRA adapters unloaded from the engine to make room for another under --max-loras.",
	}, labels))
	if err != nil {
		return nil, err
	}
	adapters, err := register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dynamo_worker_lora_adapters",
		Help: "LoRA adapters of the worker by state: held (registered in discovery, servable here) and active (loaded in the engine now; at most --max-loras).",
	}, append(labels[:3:3], "state")))
	if err != nil {
		return nil, err
	}
	l := prometheus.Labels{runtime.LabelNamespace: ep.Namespace, runtime.LabelComponent: ep.Component, runtime.LabelEndpoint: ep.Name}
	byState := adapters.MustCurryWith(l)
	return &loraMetrics{swaps: swaps.With(l), held: byState.WithLabelValues("held"), active: byState.WithLabelValues("active")}, nil
}

func (m *loraMetrics) set(held, active int) {
	m.held.Set(float64(held))
	m.active.Set(float64(active))
}
