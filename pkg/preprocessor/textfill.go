package preprocessor

import (
	"fmt"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer"
)

// TextFiller detokenizes one request's outputs where the engine runs: a
// worker whose card says postprocessing "worker" fills each
// Output.Text with it, and the frontend's Decoder then uses that text
// instead of decoding the ids. The text is what the frontend would have
// decoded: incremental per choice (seeded with the prompt, so a migrated
// request's continuation decodes right), special tokens skipped unless the
// request keeps them, and the text of a hidden stop id (EOS, stop_token_ids)
// left out once min_tokens are generated. Stop strings are not applied
// here: the frontend's stop jail applies them to the text. It is not safe
// for concurrent use.
type TextFiller struct {
	tok     *tokenizer.Tokenizer
	opts    DecoderOptions
	choices map[uint32]*fillChoice
}

type fillChoice struct {
	stream    *tokenizer.DecodeStream
	generated int
	done      bool // a hidden stop id ended it
}

// NewTextFiller returns the TextFiller of req's outputs.
func NewTextFiller(tok *tokenizer.Tokenizer, req *backend.Request) *TextFiller {
	return &TextFiller{tok: tok, opts: DecoderOptionsFor(req), choices: map[uint32]*fillChoice{}}
}

// Fill sets o.Text to the text of o's token ids (possibly "": half a
// character waits for the next ids). An output that already has text is
// left alone.
func (f *TextFiller) Fill(o *backend.Output) error {
	if o.Text != nil {
		return nil
	}
	var i uint32
	if o.Index != nil {
		i = *o.Index
	}
	c := f.choices[i]
	if c == nil {
		c = &fillChoice{stream: f.tok.NewDecodeStream(f.opts.SkipSpecialTokens, f.opts.PromptIDs...)}
		f.choices[i] = c
	}
	var text []byte
	for _, id := range o.TokenIDs {
		if c.done {
			break
		}
		c.generated++
		if c.generated > f.opts.MinTokens && contains(f.opts.HiddenStopIDs, id) {
			c.done = true
			break
		}
		piece, err := c.stream.Step(id)
		if err != nil {
			return fmt.Errorf("preprocessor: detokenize token %d: %w", id, err)
		}
		text = append(text, piece...)
	}
	s := string(text)
	o.Text = &s
	return nil
}

func contains(ids []uint32, id uint32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
