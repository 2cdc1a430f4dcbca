package frontend

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/pipeline"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// fakeFleet is served models whose workers load adapters: every one of
// workers, but those in refuse, which answer their error.
type fakeFleet struct {
	fakeModels
	workers []uint64
	refuse  map[uint64]error
}

func (f *fakeFleet) LoadLora(_ context.Context, base, name, source string, replicas int) ([]pipeline.LoraOutcome, error) {
	if f.Lookup(base) == nil {
		return nil, pipeline.ErrNoBaseModel
	}
	var out []pipeline.LoraOutcome
	for _, id := range f.workers {
		out = append(out, pipeline.LoraOutcome{InstanceID: id, Err: f.refuse[id]})
	}
	return out, nil
}

func (f *fakeFleet) UnloadLora(_ context.Context, name string) ([]pipeline.LoraOutcome, error) {
	if name != "known" {
		return nil, pipeline.ErrNoAdapter
	}
	return []pipeline.LoraOutcome{{InstanceID: 7}}, nil
}

func (f *fakeFleet) RegisterLora(context.Context, pipeline.LoraRegistration) error { return nil }
func (f *fakeFleet) EnsureLora(context.Context, string) bool                       { return false }

func (f *fakeFleet) Adapters() []pipeline.Adapter {
	return []pipeline.Adapter{{Name: "known", BaseModel: "echo", Source: "/a", Instances: []uint64{7}}}
}

func TestLoraRoutes(t *testing.T) {
	bad := runtime.NewError(runtime.TypeInvalidArgument, "no adapter files in /nope")
	fleet := &fakeFleet{fakeModels: fakeModels{served: []ServedModel{&echoModel{name: "echo"}}}, workers: []uint64{1, 2}}
	url := serveModels(t, Config{}, nil, fleet)
	post := func(body string) response { return request(t, http.MethodPost, url+"/v1/loras", body, nil) }

	t.Run("loaded on every worker, the base model found", func(t *testing.T) {
		r := post(`{"lora_name":"sql","source":"file:///adapters/sql"}`)
		var o loraObject
		if r.status != http.StatusOK || json.Unmarshal(r.body, &o) != nil || len(o.Instances) != 2 || o.BaseModel != "echo" {
			t.Fatalf("%d %s", r.status, r.body)
		}
	})
	t.Run("refused by every worker: 400 with the reasons", func(t *testing.T) {
		fleet.refuse = map[uint64]error{1: bad, 2: bad}
		defer func() { fleet.refuse = nil }()
		if r := post(`{"lora_name":"sql","source":"/nope"}`); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "no adapter files in /nope") {
			t.Fatalf("%d %s", r.status, r.body)
		}
	})
	t.Run("one worker refused: 200 with its reason", func(t *testing.T) {
		fleet.refuse = map[uint64]error{2: bad}
		defer func() { fleet.refuse = nil }()
		r := post(`{"lora_name":"sql","source":"/a"}`)
		if r.status != http.StatusOK || !strings.Contains(string(r.body), `"failed":[{"instance_id":2,"error":"no adapter files in /nope"}]`) {
			t.Fatalf("%d %s", r.status, r.body)
		}
	})
	for _, tc := range []struct{ body, want string }{
		{`{"lora_name":"a/b","source":"/a"}`, "lora_name must be"},
		{`{"lora_name":"echo","source":"/a"}`, "is the name of a served model"},
		{`{"lora_name":"x","source":"s3://b/k"}`, "source must be"},
		{`{"lora_name":"x","source":"hf://only"}`, "source must be"},
		{`{"lora_name":"x","source":"/a","replicas":-1}`, "replicas must be"},
		{`{"lora_name":"x","source":"/a","base_model":"nope"}`, "Base model not found: nope"},
		{`{"lora_name":`, "Invalid LoRA request body"},
	} {
		if r := post(tc.body); r.status/100 != 4 || !strings.Contains(string(r.body), tc.want) {
			t.Errorf("%s: %d %s, want a 4xx saying %q", tc.body, r.status, r.body, tc.want)
		}
	}
	if r := request(t, http.MethodGet, url+"/v1/loras", "", nil); r.status != http.StatusOK || !strings.Contains(string(r.body), `"lora_name":"known","base_model":"echo"`) {
		t.Errorf("GET /v1/loras: %d %s", r.status, r.body)
	}
	if r := request(t, http.MethodDelete, url+"/v1/loras/known", "", nil); r.status != http.StatusOK || !strings.Contains(string(r.body), `"deleted":true`) {
		t.Errorf("DELETE known: %d %s", r.status, r.body)
	}
	if r := request(t, http.MethodDelete, url+"/v1/loras/unknown", "", nil); r.status != http.StatusNotFound {
		t.Errorf("DELETE unknown: %d %s", r.status, r.body)
	}
}
