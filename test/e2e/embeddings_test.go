package e2e

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/dynamo-go/dynamo/pkg/mocker"
)

// embedDim is the embedding mocker's --embedding-dim.
const embedDim = 64

// TestEmbeddings serves an embedding model (a mocker with
// --embedding-dim) next to a chat model and uses /v1/embeddings through
// the official SDK as an application would: strings, token ids, base64,
// fewer dimensions, usage, and the refusals, each a 4xx the SDK reads.
func TestEmbeddings(t *testing.T) {
	c := newCluster(t, "file", "tcp")
	c.startMocker("embedder", []string{"--model-name", "embed", "--embedding-dim", "64", "--speedup-ratio", "200"})
	c.startMocker("chat", deterministic)
	f := c.startFrontend()
	waitEmbeddings(t, f, "embed")
	waitEmbeddings(t, f, "demo") // a chat model: listed, and 404 on /v1/embeddings
	ctx := t.Context()

	t.Run("strings, float", func(t *testing.T) {
		texts := []string{"The cat sat on the mat.", "A second input", "The cat sat on the mat."}
		res, err := f.sdk.Embeddings.New(ctx, openai.EmbeddingNewParams{
			Model: "embed",
			Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts},
			User:  openai.String("e2e"),
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Object != "list" || res.Model != "embed" || len(res.Data) != len(texts) {
			t.Fatalf("object %q model %q with %d embeddings; want list, embed, %d", res.Object, res.Model, len(res.Data), len(texts))
		}
		for i, d := range res.Data {
			if d.Index != int64(i) || d.Object != "embedding" || len(d.Embedding) != embedDim || math.Abs(l2(d.Embedding)-1) > 1e-5 {
				t.Errorf("data[%d]: index %d object %q, %d dimensions, norm %v; want %d, embedding, %d, 1", i, d.Index, d.Object, len(d.Embedding), l2(d.Embedding), i, embedDim)
			}
		}
		if !slices.Equal(res.Data[0].Embedding, res.Data[2].Embedding) || slices.Equal(res.Data[0].Embedding, res.Data[1].Embedding) {
			t.Error("the same text must get the same embedding, another text another")
		}
		if res.Usage.PromptTokens < int64(len(texts)) || res.Usage.TotalTokens != res.Usage.PromptTokens {
			t.Errorf("usage %+v: want the inputs' tokens, prompt = total", res.Usage)
		}
	})

	t.Run("token ids are embedded as given", func(t *testing.T) {
		ids := [][]int64{{5, 6, 7}, {42}}
		res, err := f.sdk.Embeddings.New(ctx, openai.EmbeddingNewParams{
			Model: "embed",
			Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfTokenArrays: ids},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Data) != 2 || res.Usage.PromptTokens != 4 || res.Usage.TotalTokens != 4 {
			t.Fatalf("%d embeddings, usage %+v; want 2 and 4 tokens", len(res.Data), res.Usage)
		}
		for i, in := range ids {
			want := mocker.DeterministicEmbedding(uint32s(in), embedDim)
			if !sameFloat32(res.Data[i].Embedding, want) {
				t.Errorf("input %v: the embedding is not the mocker's for those ids", in)
			}
		}
		one, err := f.sdk.Embeddings.New(ctx, openai.EmbeddingNewParams{
			Model: "embed",
			Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfTokens: ids[0]},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(one.Data) != 1 || !slices.Equal(one.Data[0].Embedding, res.Data[0].Embedding) {
			t.Error("one token list must get the embedding it gets in a batch")
		}
	})

	t.Run("base64", func(t *testing.T) {
		params := openai.EmbeddingNewParams{
			Model: "embed",
			Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("Encode me.")},
		}
		float, err := f.sdk.Embeddings.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		params.EncodingFormat = openai.EmbeddingNewParamsEncodingFormatBase64
		b64, err := f.sdk.Embeddings.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if !sameFloat32(b64.Data[0].Embedding, float.Data[0].Embedding) {
			t.Error("the SDK decodes the base64 embedding to other numbers than the float one")
		}
		// On the wire: a string of little-endian float32s.
		resp, body := f.post(t, "/v1/embeddings", object{"model": "embed", "input": "Encode me.", "encoding_format": "base64"})
		var raw struct {
			Data []struct {
				Embedding json.RawMessage `json:"embedding"`
			} `json:"data"`
		}
		var s string
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &raw) != nil || len(raw.Data) != 1 || json.Unmarshal(raw.Data[0].Embedding, &s) != nil {
			t.Fatalf("POST base64: %d %s; want one embedding as a JSON string", resp.StatusCode, body)
		}
		bytes, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(bytes) != 4*embedDim {
			t.Fatalf("base64 embedding: %d bytes (%v), want %d", len(bytes), err, 4*embedDim)
		}
		for i := range embedDim {
			if got := math.Float32frombits(binary.LittleEndian.Uint32(bytes[4*i:])); got != float32(float.Data[0].Embedding[i]) {
				t.Fatalf("component %d: %v in base64, %v as float", i, got, float.Data[0].Embedding[i])
			}
		}
	})

	t.Run("fewer dimensions", func(t *testing.T) {
		params := openai.EmbeddingNewParams{
			Model: "embed",
			Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfTokens: []int64{9, 8, 7}},
		}
		full, err := f.sdk.Embeddings.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		params.Dimensions = openai.Int(16)
		short, err := f.sdk.Embeddings.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		v := short.Data[0].Embedding
		if len(v) != 16 || math.Abs(l2(v)-1) > 1e-5 {
			t.Fatalf("%d dimensions with norm %v, want 16 and 1", len(v), l2(v))
		}
		prefix := full.Data[0].Embedding[:16]
		scale := l2(prefix)
		for i := range v {
			if math.Abs(v[i]-prefix[i]/scale) > 1e-5 {
				t.Fatalf("component %d: %v, want the full embedding's prefix renormalised, %v", i, v[i], prefix[i]/scale)
			}
		}
	})

	t.Run("refusals", func(t *testing.T) {
		long := make([]int64, 4097) // the demo model's context is 4096
		for _, tc := range []struct {
			name   string
			params openai.EmbeddingNewParams
			status int
			param  string
			phrase string
		}{
			{"dimensions above the model's", openai.EmbeddingNewParams{Model: "embed", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("x")}, Dimensions: openai.Int(embedDim + 1)}, 400, "dimensions", "dimensions 65"},
			{"no dimensions", openai.EmbeddingNewParams{Model: "embed", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("x")}, Dimensions: openai.Int(0)}, 400, "dimensions", "at least 1"},
			{"an empty string", openai.EmbeddingNewParams{Model: "embed", Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"a", ""}}}, 400, "input[1]", "empty string"},
			{"too many inputs", openai.EmbeddingNewParams{Model: "embed", Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: slices.Repeat([]string{"a"}, 2049)}}, 400, "input", "at most 2048"},
			{"over the context", openai.EmbeddingNewParams{Model: "embed", Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfTokens: long}}, 400, "input", "maximum context length is 4096 tokens. However, your input resulted in 4097 tokens"},
			{"outside the vocabulary", openai.EmbeddingNewParams{Model: "embed", Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfTokenArrays: [][]int64{{1}, {1, 100000}}}}, 400, "input[1]", "out of range"},
			{"a chat model", openai.EmbeddingNewParams{Model: "demo", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("x")}}, 404, "", "Model not found"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := f.sdk.Embeddings.New(ctx, tc.params)
				var apiErr *openai.Error
				if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.status {
					t.Fatalf("err %v, want an *openai.Error with status %d", err, tc.status)
				}
				if apiErr.Param != tc.param || !strings.Contains(apiErr.Message, tc.phrase) {
					t.Errorf("param %q message %q; want param %q and a message containing %q", apiErr.Param, apiErr.Message, tc.param, tc.phrase)
				}
			})
		}
		_, err := f.sdk.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model:    "embed",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		})
		if apiErr := (*openai.Error)(nil); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound {
			t.Errorf("chat on the embedding model: err %v, want 404", err)
		}
	})

	t.Run("metrics", func(t *testing.T) {
		m := f.scrape(t)
		if v, _ := m.value("dynamo_frontend_requests_total", `model="embed"`, `endpoint="embeddings"`, `request_type="unary"`, `status="success"`); v < 8 {
			t.Errorf("requests_total of successful embeddings requests %v, want at least 8", v)
		}
	})
}

// waitEmbeddings waits until model is listed and answers an embeddings
// request (a worker's card may arrive a moment before its instance: 503),
// or, for a chat model, refuses it with 404.
func waitEmbeddings(t *testing.T, f *frontend, model string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if f.exited() {
			f.fatalf(t, "frontend exited while waiting for %s", model)
		}
		if slices.Contains(f.modelIDs(t), model) {
			resp, body := f.post(t, "/v1/embeddings", object{"model": model, "input": "ping"})
			if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusNotFound {
				return
			}
			if resp.StatusCode != http.StatusServiceUnavailable {
				f.fatalf(t, "model %s is listed but its embeddings answer %d %s", model, resp.StatusCode, body)
			}
		}
		if time.Now().After(deadline) {
			f.fatalf(t, "after 30s /v1/models lists %v, without %s answering", f.modelIDs(t), model)
		}
	}
}

func l2(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}

// sameFloat32 reports whether a and b are the same numbers at float32
// precision (what the API sends).
func sameFloat32(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if float32(a[i]) != float32(b[i]) {
			return false
		}
	}
	return true
}

func uint32s(ids []int64) []uint32 {
	out := make([]uint32, len(ids))
	for i, id := range ids {
		out[i] = uint32(id)
	}
	return out
}
