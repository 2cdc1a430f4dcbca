package runtime

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestKeysAndSubjects(t *testing.T) {
	ep := EndpointID{Namespace: "dynamo", Component: "backend", Name: "generate"}
	id := uint64(0x694d98147d54c0a0)
	if got, want := InstanceKey(ep, id), "v1/instances/dynamo/backend/generate/694d98147d54c0a0"; got != want {
		t.Errorf("InstanceKey = %q, want %q", got, want)
	}
	if got, want := NATSSubject(ep, id), "dynamo_backend.generate-694d98147d54c0a0"; got != want {
		t.Errorf("NATSSubject = %q, want %q", got, want)
	}
	if got, want := TCPRoutingKey(ep, id), "694d98147d54c0a0/generate"; got != want {
		t.Errorf("TCPRoutingKey = %q, want %q", got, want)
	}
	back, err := instanceIDFromKey(InstanceKey(ep, id))
	if err != nil || back != id {
		t.Errorf("instanceIDFromKey = %x, %v", back, err)
	}
}

func TestParseEndpointIDAndValidation(t *testing.T) {
	id, err := ParseEndpointID("dyn://team.prod.backend.generate")
	if err != nil || id.Namespace != "team.prod" || id.Component != "backend" || id.Name != "generate" {
		t.Fatalf("ParseEndpointID = %+v, %v", id, err)
	}
	for _, bad := range []string{"dyn://a.b", "dyn://A.b.c", "dyn://a.b c.d", "dyn://a..b.c"} {
		if _, err := ParseEndpointID(bad); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("ParseEndpointID(%q) err = %v, want InvalidArgument", bad, err)
		}
	}
}

func TestInstanceRecordJSON(t *testing.T) {
	// etcd lease ids exceed 2^53: the id must survive exactly.
	in := Instance{Namespace: "dynamo", Component: "backend", Endpoint: "generate", ID: 7587888160958628001, Transport: Transport{TCP: "10.0.0.5:43211/694d98147d54c0a0/generate"}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"Endpoint","namespace":"dynamo","component":"backend","endpoint":"generate","instance_id":7587888160958628001,"transport":{"tcp":"10.0.0.5:43211/694d98147d54c0a0/generate"}}`
	if string(b) != want {
		t.Fatalf("record:\n got %s\nwant %s", b, want)
	}
	var out Instance
	if err := json.Unmarshal(b, &out); err != nil || out != in {
		t.Fatalf("round trip = %+v, %v", out, err)
	}
	legacy := `{"component":"backend","endpoint":"generate","namespace":"dynamo","instance_id":1,"transport":{"nats_tcp":"dynamo_backend.generate-1"}}`
	if err := json.Unmarshal([]byte(legacy), &out); err != nil || out.Transport.NATS != "dynamo_backend.generate-1" {
		t.Fatalf("legacy record = %+v, %v", out, err)
	}
	if err := json.Unmarshal([]byte(`{"type":"Model"}`), &out); err == nil {
		t.Fatal("a Model record must not decode as an instance")
	}
}
