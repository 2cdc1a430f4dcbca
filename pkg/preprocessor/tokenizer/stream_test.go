package tokenizer

import (
	"slices"
	"strings"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer/internal/bytelevel"
)

const llamaDecoder = `{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"▁"},"content":" "},{"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]}`

// streamAll steps every id and returns the emitted pieces.
func streamAll(t *testing.T, s *DecodeStream, ids []uint32) []string {
	t.Helper()
	var out []string
	for _, id := range ids {
		piece, err := s.Step(id)
		if err != nil {
			t.Fatalf("Step(%d): %v", id, err)
		}
		out = append(out, piece)
	}
	return out
}

func TestStreamByteLevelEmoji(t *testing.T) {
	emoji := bytelevel.Encode("😀") // 4 alphabet characters
	r := []rune(emoji)
	vocab := []string{"Hello", bytelevel.Encode(" world"), bytelevel.Encode(" "), string(r[:2]), string(r[2:3]), string(r[3:]), "<|im_end|>"}
	tok := build(t, vocab, nil, []AddedToken{{ID: 6, Content: "<|im_end|>", Special: true}},
		map[string]string{"decoder": `{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":false}`})
	ids := []uint32{0, 1, 2, 3, 4, 5, 6}
	got := streamAll(t, tok.NewDecodeStream(true), ids)
	want := []string{"Hello", " world", " ", "", "", "😀", ""}
	if !slices.Equal(got, want) {
		t.Fatalf("stream = %q want %q", got, want)
	}
	full, _ := tok.Decode(ids, true)
	if strings.Join(got, "") != full {
		t.Fatalf("concatenation %q != Decode %q", strings.Join(got, ""), full)
	}
	// Without skipping, the special token text is emitted.
	got = streamAll(t, tok.NewDecodeStream(false), ids)
	if got[len(got)-1] != "<|im_end|>" {
		t.Fatalf("special not emitted: %q", got)
	}
}

func TestStreamByteFallbackAndMetaspace(t *testing.T) {
	vocab := []string{"<unk>", "▁Hello", "▁world", "▁", "<0xF0>", "<0x9F>", "<0x98>", "<0x80>", "!"}
	tok := build(t, vocab, nil, nil, map[string]string{"decoder": llamaDecoder})
	ids := []uint32{1, 2, 3, 4, 5, 6, 7, 8}
	got := streamAll(t, tok.NewDecodeStream(false), ids)
	want := []string{"Hello", " world", " ", "", "", "", "😀", "!"}
	if !slices.Equal(got, want) {
		t.Fatalf("stream = %q want %q", got, want)
	}
	full, _ := tok.Decode(ids, false)
	if strings.Join(got, "") != full {
		t.Fatalf("concatenation %q != Decode %q", strings.Join(got, ""), full)
	}
	// With the prompt as context, the first generated "▁world" keeps its
	// space (decoding it alone would strip it).
	got = streamAll(t, tok.NewDecodeStream(false, 1), []uint32{2, 8})
	if !slices.Equal(got, []string{" world", "!"}) {
		t.Fatalf("with prompt: %q", got)
	}
	if d, _ := tok.Decode([]uint32{2}, false); d != "world" {
		t.Fatalf("Decode alone = %q", d)
	}
}
