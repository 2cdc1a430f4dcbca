package tokenizer_test

import (
	"slices"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer"
)

// Metaspace with prepend_scheme "first" prepends ▁ only to the piece that
// starts the input, not to text after an added token. Expected ids are HF
// tokenizers 0.23.2's for the same file.
func TestMetaspacePrependFirstOnlyAtTheStart(t *testing.T) {
	tok, err := tokenizer.FromBytes([]byte(`{"version":"1.0","truncation":null,"padding":null,
 "added_tokens":[{"id":3,"content":"<t>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}],
 "normalizer":null,
 "pre_tokenizer":{"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":true},
 "post_processor":null,"decoder":null,
 "model":{"type":"WordLevel","vocab":{"▁a":0,"b":1,"▁b":2,"<t>":3,"a":4,"[UNK]":5},"unk_token":"[UNK]"}}`))
	if err != nil {
		t.Fatal(err)
	}
	for text, want := range map[string][]uint32{
		"a<t>b":     {0, 3, 1},
		"a b<t>b a": {0, 2, 3, 1, 0},
	} {
		got, err := tok.Encode(text, false)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("Encode(%q) = %v, %v; want %v", text, got, err, want)
		}
	}
}

// A tokenizer.json that is not valid UTF-8 is refused, as HF refuses it.
func TestInvalidUTF8FileIsRefused(t *testing.T) {
	_, err := tokenizer.FromBytes([]byte("{\"model\":{\"type\":\"WordLevel\",\"vocab\":{\"\xff\":0},\"unk_token\":\"\xff\"}}"))
	if err == nil {
		t.Fatal("invalid UTF-8 accepted")
	}
}
