package modelcard

import (
	"encoding/json"
	"testing"
)

func TestModelTypeJSON(t *testing.T) {
	b, err := json.Marshal(ModelChat | ModelCompletions)
	if err != nil || string(b) != `"Chat | Completions"` {
		t.Fatalf("Marshal = %s, %v", b, err)
	}
	for in, want := range map[string]ModelType{
		`"Chat | Completions"`:      ModelChat | ModelCompletions,
		`["chat","completions"]`:    ModelChat | ModelCompletions,
		`"Backend"`:                 ModelChat | ModelCompletions,
		`"Completion"`:              ModelCompletions,
		`"Embedding|Prefill"`:       ModelEmbedding | ModelPrefill,
		`3`:                         ModelChat | ModelCompletions,
		`""`:                        0,
		`"TensorBased,Images"`:      ModelTensorBased | ModelImages,
		`"Audios | Videos | 0x100"`: ModelAudios | ModelVideos | 0x100,
	} {
		var got ModelType
		if err := json.Unmarshal([]byte(in), &got); err != nil || got != want {
			t.Errorf("Unmarshal(%s) = %v, %v; want %v", in, got, err, want)
		}
	}
	var bad ModelType
	if err := json.Unmarshal([]byte(`"Chat | Sing"`), &bad); err == nil {
		t.Error("unknown flag accepted")
	}
	if !(ModelChat | ModelCompletions).Has(ModelChat) || ModelChat.Has(ModelCompletions) || ModelChat.Has(0) {
		t.Error("Has")
	}
}

func TestWorkerType(t *testing.T) {
	for in, want := range map[string]WorkerType{
		"": WorkerAggregated, "agg": WorkerAggregated, "Aggregated": WorkerAggregated,
		"prefill": WorkerPrefill, "DECODE": WorkerDecode, "encode": WorkerEncode,
	} {
		if got, err := ParseWorkerType(in); err != nil || got != want {
			t.Errorf("ParseWorkerType(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseWorkerType("both"); err == nil {
		t.Error("ParseWorkerType(both) succeeded")
	}
	var w WorkerType
	if err := json.Unmarshal([]byte(`"decode"`), &w); err != nil || w != WorkerDecode {
		t.Errorf("Unmarshal decode = %v, %v", w, err)
	}
	b, _ := json.Marshal(WorkerPrefill)
	if string(b) != `"Prefill"` {
		t.Errorf("Marshal = %s", b)
	}
}
