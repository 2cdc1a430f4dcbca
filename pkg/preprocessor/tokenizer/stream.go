package tokenizer

import (
	"errors"
	"strings"
)

// ErrInvalidPrefix is returned by DecodeStream.Step when the decoded text no
// longer starts with the text already emitted (should not happen with the
// supported decoders).
var ErrInvalidPrefix = errors.New("tokenizer: decode stream: invalid prefix")

// maxPromptContext is how many trailing prompt ids seed a stream; a few are
// enough to give the first generated token its context (e.g. Metaspace's
// leading space, a character split across tokens).
const maxPromptContext = 8

// DecodeStream decodes generated ids incrementally (the prefix/read offset
// algorithm of Rust tokenizers' DecodeStream, TGI and vLLM). It is not safe
// for concurrent use.
type DecodeStream struct {
	t           *Tokenizer
	skip        bool
	ids         []uint32
	prefix      string
	prefixIndex int
}

// NewDecodeStream returns a stream decoder. promptIDs, if given, are the
// ids preceding the generated ones (their text is never emitted); they make
// the first generated token decode as it does in context.
func (t *Tokenizer) NewDecodeStream(skipSpecialTokens bool, promptIDs ...uint32) *DecodeStream {
	if len(promptIDs) > maxPromptContext {
		promptIDs = promptIDs[len(promptIDs)-maxPromptContext:]
	}
	return &DecodeStream{t: t, skip: skipSpecialTokens, ids: append([]uint32(nil), promptIDs...)}
}

// Step adds one generated id and returns the text that became complete
// (possibly ""): text is only emitted once it does not end in an
// incomplete UTF-8 sequence (U+FFFD).
func (s *DecodeStream) Step(id uint32) (string, error) {
	if s.prefix == "" && len(s.ids) > 0 {
		p, err := s.t.Decode(s.ids, s.skip)
		if err != nil {
			return "", err
		}
		if !strings.HasSuffix(p, "\uFFFD") {
			s.prefix, s.prefixIndex = p, len(s.ids)
		}
	}
	s.ids = append(s.ids, id)
	str, err := s.t.Decode(s.ids, s.skip)
	if err != nil {
		return "", err
	}
	if len(str) <= len(s.prefix) || strings.HasSuffix(str, "\uFFFD") {
		return "", nil
	}
	if !strings.HasPrefix(str, s.prefix) {
		return "", ErrInvalidPrefix
	}
	text := str[len(s.prefix):]
	newPrefixIndex := len(s.ids) - s.prefixIndex
	s.ids = append(s.ids[:0], s.ids[s.prefixIndex:]...)
	if s.prefix, err = s.t.Decode(s.ids, s.skip); err != nil {
		return "", err
	}
	s.prefixIndex = newPrefixIndex
	return text, nil
}
