package bridge

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ErrVocabMismatch is wrapped by Start's error when the engine tokenizes
// the probe text differently from the card's tokenizer: token ids sent
// to it would mean other text.
var ErrVocabMismatch = errors.New("bridge: vocabulary mismatch")

// Vocabulary is the card's tokenizer, which Start checks the engine's
// against (Config.Vocabulary).
type Vocabulary struct {
	// Encode tokenizes text without adding special tokens, special
	// tokens written in it parsed as such.
	Encode func(text string) ([]uint32, error)
	// Special are special token strings of the model (its BOS, EOS, chat
	// markers); the probe carries up to three of them.
	Special []string
}

// probeText is the text both tokenizers encode: special tokens, ASCII
// and non-ASCII words, digits, punctuation and whitespace runs, where
// vocabularies and pre-tokenizers differ.
func probeText(special []string) string {
	var b strings.Builder
	pick := special
	if len(pick) > 3 {
		pick = pick[:3]
	}
	for i, s := range pick {
		b.WriteString(s)
		if i == 0 {
			b.WriteString("user\n")
		}
	}
	b.WriteString("Hello, wörld! Don't panic: 12345 + 3.14159 = ?\n\n  \t indented   spaces")
	b.WriteString(" 日本語のテキスト, émigré café, Ελληνικά 🙂👍🏽\r\n")
	b.WriteString("func main() { fmt.Println(\"x\") }\t// tab")
	return b.String()
}

// checkVocabulary tokenizes the probe with the card's tokenizer and the
// engine's. It returns whether the check ran (an engine without a text
// tokenize endpoint, or one that refuses it, cannot be checked: logged),
// and an error wrapping ErrVocabMismatch, with the first differing ids,
// when they differ.
func (e *Engine) checkVocabulary(ctx context.Context, info engineInfo) (bool, error) {
	v := e.cfg.Vocabulary
	probe := probeText(v.Special)
	want, err := v.Encode(probe)
	if err != nil {
		return false, fmt.Errorf("bridge: the model's tokenizer cannot encode the probe: %w", err)
	}
	got, err := e.tokenizeText(ctx, info, probe, false)
	if err != nil {
		e.log.Warn("bridge: the engine's vocabulary is not checked against the model's tokenizer", "dialect", e.cfg.Dialect, "url", e.base, "err", err)
		return false, nil
	}
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	if i == len(want) && i == len(got) {
		e.log.Info("bridge: the engine's vocabulary agrees with the model's tokenizer", "dialect", e.cfg.Dialect, "probe_tokens", len(want))
		return true, nil
	}
	return true, fmt.Errorf("%w: the %s engine at %s tokenizes a probe text differently from the model's tokenizer: from token %d, engine %v, tokenizer %v (%d and %d tokens): it serves another model than the worker's --model-path",
		ErrVocabMismatch, e.cfg.Dialect, e.base, i, window(got, i), window(want, i), len(got), len(want))
}

// window returns up to 6 ids of ids from i.
func window(ids []uint32, i int) []uint32 {
	if i >= len(ids) {
		return []uint32{}
	}
	return ids[i:min(len(ids), i+6)]
}
