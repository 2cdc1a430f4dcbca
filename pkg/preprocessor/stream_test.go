package preprocessor

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

var update = flag.Bool("update", false, "rewrite the golden SSE transcripts")

// scripted is a next stage that streams fixed token ids one per output,
// then a terminal output, like an engine would. It notices a stop from
// the caller and then ends with cancelled, as engines must.
type scripted struct {
	ids    []uint32
	finish backend.FinishKind // terminal kind when the ids run out
	errMsg string             // for an error finish
	usage  *backend.Usage

	mu       sync.Mutex
	requests []*backend.Request
	stopped  bool // the caller stopped generation
	sentPost int  // ids sent after the stop was seen
}

func (s *scripted) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	rc, _ := runtime.FromContext(ctx)
	for _, id := range s.ids {
		if rc != nil && rc.IsStopped() {
			s.mu.Lock()
			s.stopped = true
			s.mu.Unlock()
			return emit(backend.Cancelled())
		}
		if err := emit(backend.Tokens(id)); err != nil {
			return err
		}
	}
	var out *backend.Output
	if s.finish == backend.FinishError {
		out = backend.Failed(s.errMsg)
	} else {
		out = backend.Finish(s.finish)
	}
	out.CompletionUsage = s.usage
	return emit(out)
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "sse", name+".sse")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("transcript %s differs\n got:\n%s\nwant:\n%s", name, got, want)
	}
}

func encodeIDs(t *testing.T, m *Model, text string) []uint32 {
	t.Helper()
	ids, err := m.Tokenizer().Encode(text, false)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestChatStreamTranscripts runs chat requests through Chat against a
// scripted engine and compares the SSE a client would read with golden
// transcripts (each was read and checked by hand once).
func TestChatStreamTranscripts(t *testing.T) {
	m := demoModel(t)
	const eos = 511
	cases := []struct {
		name     string
		extra    string // request fields after messages
		text     string // what the engine generates
		tail     []uint32
		finish   backend.FinishKind
		wantStop bool // the decoder must stop the engine itself
		usage    *backend.Usage
	}{
		{name: "eos_hidden", text: "Hello world", tail: []uint32{eos}, finish: backend.FinishEOS},
		{name: "multibyte_split", text: "naïve 🤗 日本", finish: backend.FinishLength},
		{name: "stop_spanning_tokens", text: "Hello world again", finish: backend.FinishLength, extra: `,"stop":["o wor"]`, wantStop: true},
		{name: "stop_at_first_token", text: "Hello world", finish: backend.FinishLength, extra: `,"stop":"H"`, wantStop: true},
		{name: "stop_visible", text: "Hello world again", finish: backend.FinishLength, extra: `,"stop":"world","include_stop_str_in_output":true`, wantStop: true},
		{name: "stop_prefix_released", text: "Hello wonder", finish: backend.FinishLength, extra: `,"stop":"world"`},
		{name: "length_no_usage", text: "Hi there", finish: backend.FinishLength, extra: `,"stream_options":null`},
		{name: "cached_tokens_and_annotations", text: "ok", finish: backend.FinishLength,
			extra: `,"nvext":{"annotations":["request_id","formatted_prompt","token_ids"]}`, usage: &backend.Usage{PromptTokensDetails: &backend.PromptDetail{CachedTokens: 4}}},
		{name: "continuous_usage", text: "a b", finish: backend.FinishLength, extra: `,"stream_options":{"include_usage":true,"continuous_usage_stats":true}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			eng := &scripted{ids: append(encodeIDs(t, m, c.text), c.tail...), finish: c.finish, usage: c.usage}
			body := `{"model":"demo","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}` + c.extra + `}`
			req := decodeChat(t, body)
			var transcript bytes.Buffer // written as emitted: Chat reuses its chunk
			err := m.Chat(context.Background(), "req-1", req, eng, func(ev Event) error {
				return openai.WriteSSE(&transcript, ev.Name, ev.Data)
			})
			if err != nil {
				t.Fatal(err)
			}
			if eng.stopped != c.wantStop {
				t.Errorf("engine stopped by the decoder: %v, want %v", eng.stopped, c.wantStop)
			}
			transcript.WriteString(openai.SSEDone)
			golden(t, "chat_"+c.name, transcript.String())
		})
	}
}

// TestChatStreamContentReassembles checks, for many stop strings, that the
// streamed deltas concatenate to the generated text cut before the stop,
// that the usage counts the tokens up to the stop, and that no chunk ever
// carries a part of the stop string.
func TestChatStreamContentReassembles(t *testing.T) {
	m := demoModel(t)
	text := "The quick brown fox jumps over the lazy dog. Ünïcödé 🤗 text!"
	ids := encodeIDs(t, m, text)
	for _, stop := range []string{"quick", "fox j", "dog.", "🤗", "ö", "text!", "x", "lazy dog. Ü"} {
		t.Run(stop, func(t *testing.T) {
			eng := &scripted{ids: ids, finish: backend.FinishLength}
			req := decodeChat(t, `{"model":"demo","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true},"stop":`+jsonString(stop)+`}`)
			var content strings.Builder
			var usage *openai.Usage
			var matched []string // MatchedStop of the chunks that finish
			statTokens := 0
			err := m.Chat(context.Background(), "r", req, eng, func(ev Event) error {
				c := ev.Data.(*openai.ChatCompletionChunk)
				if ev.Stats == nil {
					t.Errorf("chunk event without stats")
				} else {
					statTokens += ev.Stats.Tokens
				}
				if c.Usage != nil {
					usage = c.Usage
				}
				for _, ch := range c.Choices {
					if ch.FinishReason != nil {
						matched = append(matched, ch.MatchedStop)
					}
					if ch.Delta.Content != nil {
						if strings.Contains(*ch.Delta.Content, stop) {
							t.Errorf("chunk %q carries the stop string", *ch.Delta.Content)
						}
						content.WriteString(*ch.Delta.Content)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			want := text[:strings.Index(text, stop)]
			// The last chunk says which stop string ended the choice
			// (Anthropic's stop_sequence reads it).
			if len(matched) != 1 || matched[0] != stop {
				t.Errorf("finishing chunks' MatchedStop %q, want [%q]", matched, stop)
			}
			if content.String() != want {
				t.Errorf("content %q, want %q", content.String(), want)
			}
			if usage == nil || usage.CompletionTokens == 0 || usage.CompletionTokens > len(ids) || usage.TotalTokens != usage.PromptTokens+usage.CompletionTokens {
				t.Errorf("usage %+v", usage)
			} else if statTokens != usage.CompletionTokens {
				t.Errorf("chunk stats account for %d tokens, usage says %d", statTokens, usage.CompletionTokens)
			}
		})
	}
}

func jsonString(s string) string {
	var b bytes.Buffer
	_ = openai.WriteSSE(&b, "", s)
	return strings.TrimSuffix(strings.TrimPrefix(b.String(), "data: "), "\n\n")
}

func TestChatUnaryFolds(t *testing.T) {
	m := demoModel(t)
	eng := &scripted{ids: append(encodeIDs(t, m, "Hello world"), 511), finish: backend.FinishEOS}
	resp, err := m.ChatUnary(context.Background(), "u1", decodeChat(t, `{"model":"demo","messages":[{"role":"user","content":"hi"}]}`), eng)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ID != "chatcmpl-u1" || resp.Object != "chat.completion" || len(resp.Choices) != 1 {
		t.Fatalf("response %+v", resp)
	}
	ch := resp.Choices[0]
	if *ch.Message.Content != "Hello world" || ch.Message.Role != "assistant" || *ch.FinishReason != "stop" {
		t.Errorf("choice %+v content %q", ch, *ch.Message.Content)
	}
	prompt := len(eng.requests[0].TokenIDs)
	if u := resp.Usage; u == nil || u.PromptTokens != prompt || u.CompletionTokens != len(eng.ids) || u.TotalTokens != prompt+len(eng.ids) {
		t.Errorf("usage %+v, want prompt %d completion %d", resp.Usage, prompt, len(eng.ids))
	}
}

func TestChatStreamErrors(t *testing.T) {
	m := demoModel(t)
	req := `{"model":"demo","messages":[{"role":"user","content":"hi"}],"stream":true}`
	t.Run("engine error mid-stream", func(t *testing.T) {
		eng := &scripted{ids: encodeIDs(t, m, "partial"), finish: backend.FinishError, errMsg: "out of KV blocks"}
		var got strings.Builder
		err := m.Chat(context.Background(), "e", decodeChat(t, req), eng, func(ev Event) error {
			for _, ch := range ev.Data.(*openai.ChatCompletionChunk).Choices {
				if ch.Delta.Content != nil {
					got.WriteString(*ch.Delta.Content)
				}
			}
			return nil
		})
		var re *runtime.Error
		if !errors.As(err, &re) || !strings.Contains(err.Error(), "out of KV blocks") {
			t.Fatalf("got %v, want the engine's error", err)
		}
		if got.String() != "partial" {
			t.Errorf("content before the error %q", got.String())
		}
	})
	t.Run("stream without a finish", func(t *testing.T) {
		eng := backend.GeneratorFunc(func(ctx context.Context, r *backend.Request, emit func(*backend.Output) error) error {
			return emit(backend.Tokens(39))
		})
		err := m.Chat(context.Background(), "e", decodeChat(t, req), eng, func(Event) error { return nil })
		if !errors.Is(err, runtime.ErrStreamIncomplete) {
			t.Fatalf("got %v, want a stream-incomplete error", err)
		}
	})
	t.Run("validation error before any event", func(t *testing.T) {
		sent := 0
		err := m.Chat(context.Background(), "e", decodeChat(t, `{"model":"demo","messages":[{"role":"user","content":"x"}],"continue_final_message":true,"add_generation_prompt":true}`),
			&scripted{}, func(Event) error { sent++; return nil })
		var ve *openai.ValidationError
		if !errors.As(err, &ve) || sent != 0 {
			t.Fatalf("got %v after %d events, want a validation error and no event", err, sent)
		}
	})
}
