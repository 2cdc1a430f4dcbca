package modeldir

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dynamo-go/dynamo/pkg/backend/worker"
	"github.com/dynamo-go/dynamo/pkg/hfhub"
	"github.com/dynamo-go/dynamo/pkg/mocker"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer"
)

// Model is what a mocker takes from its model directory besides its
// engine's configuration.
type Model struct {
	Card      *modelcard.Card
	Tokenizer *tokenizer.Tokenizer
	EOS       []uint32 // the generation config's EOS token ids
}

// Fill takes the model name, the context length and the KV bytes per
// token (for a prefill worker's transfer delay) from the model directory
// of w (resolved on the hub when it is an id) when c does not set them,
// and builds c's script of canned answers and guided decoding with the
// model's tokenizer. It returns the model it read.
func Fill(ctx context.Context, c *mocker.Config, w worker.Config, kvCacheDType string, canned []Canned, log *slog.Logger) (*Model, error) {
	dir, err := hfhub.Resolve(ctx, w.Hub, w.ModelPath)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", w.ModelPath, err)
	}
	card, err := modelcard.FromDir(dir, modelcard.Options{Name: w.ModelName, Source: w.ModelPath, ChatTemplateFile: w.ChatTemplateFile})
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", w.ModelPath, err)
	}
	c.Model = card.DisplayName
	if c.ContextLength == 0 {
		c.ContextLength = int(card.ContextLength)
	}
	tok, err := tokenizer.FromBytes(card.TokenizerJSON.Bytes())
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", w.ModelPath, err)
	}
	m := &Model{Card: card, Tokenizer: tok, EOS: card.GenConfig.EOSTokenIDs}
	c.OutputTokens = OutputVocabulary(tok, card.GenConfig.EOSTokenIDs)
	if c.Script, err = Script(tok, canned, log); err != nil {
		return nil, err
	}
	if c.DisaggregationMode == mocker.ModePrefill && c.KVBytesPerToken == 0 && c.KVTransferBandwidth > 0 {
		var err error
		if card.ConfigJSON == nil {
			err = fmt.Errorf("%w: the model has no config.json", mocker.ErrNoKVShape)
		} else {
			c.KVBytesPerToken, err = mocker.KVBytesPerToken(card.ConfigJSON.Bytes(), kvCacheDType)
		}
		switch {
		case errors.Is(err, mocker.ErrNoKVShape):
			log.Info("mocker: no KV transfer delay (set --kv-bytes-per-token for one)", "model", w.ModelPath, "reason", err)
		case err != nil:
			return nil, fmt.Errorf("model %s: %w", w.ModelPath, err)
		default:
			log.Info("mocker: KV transfer delay", "kv_bytes_per_token", c.KVBytesPerToken, "gb_per_s", c.KVTransferBandwidth)
		}
	}
	return m, nil
}

// OutputVocabulary returns the model's ordinary tokens: ids that are not
// special, not EOS, and decode on their own to non-empty valid UTF-8
// without control characters.
// Drawing output from them makes the mocker's answers decode to text (of
// no meaning) and never end early on an EOS by chance.
func OutputVocabulary(tok *tokenizer.Tokenizer, eos []uint32) []uint32 {
	skip := map[uint32]bool{}
	for _, id := range eos {
		skip[id] = true
	}
	var out []uint32
	for id := uint32(0); int(id) < tok.VocabSize(); id++ {
		if skip[id] || tok.IsSpecial(id) {
			continue
		}
		s, err := tok.Decode([]uint32{id}, false)
		if err != nil || s == "" || !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r == utf8.RuneError || unicode.IsControl(r) }) {
			continue
		}
		out = append(out, id)
	}
	return out
}
