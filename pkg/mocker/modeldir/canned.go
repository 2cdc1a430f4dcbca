package modeldir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/mocker"
	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer"
)

// Canned is one entry of the --canned-responses file: the answer of
// the requests whose prompt contains PromptContains. Text answers every
// choice; Texts answers choice i with Texts[i], the last one repeated.
type Canned struct {
	PromptContains string   `json:"prompt_contains"`
	Text           *string  `json:"text"`
	Texts          []string `json:"texts"`
}

// ReadCanned reads and checks a --canned-responses file: a JSON list of
// entries, each with a non-empty prompt_contains and either text or a
// non-empty texts.
func ReadCanned(path string) ([]Canned, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--canned-responses: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var entries []Canned
	if err := dec.Decode(&entries); err != nil {
		return nil, fmt.Errorf("--canned-responses %s: want a JSON list of {\"prompt_contains\", \"text\" or \"texts\"}: %w", path, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("--canned-responses %s: data after the list", path)
	}
	var errs []error
	for i, e := range entries {
		switch {
		case e.PromptContains == "":
			errs = append(errs, fmt.Errorf("--canned-responses %s: entry %d: prompt_contains is empty", path, i))
		case e.Text == nil && len(e.Texts) == 0:
			errs = append(errs, fmt.Errorf("--canned-responses %s: entry %d: want text or texts", path, i))
		case e.Text != nil && len(e.Texts) > 0:
			errs = append(errs, fmt.Errorf("--canned-responses %s: entry %d: text and texts exclude each other", path, i))
		}
	}
	return entries, errors.Join(errs...)
}

// cannedScript is an entry with its texts encoded.
type cannedScript struct {
	contains string
	texts    []string   // per choice, the last repeated
	ids      [][]uint32 // the texts encoded
}

// Script returns the engine's Config.Script. A request whose prompt,
// decoded with tok (special tokens kept), contains an entry's
// prompt_contains gets the first such entry's text, encoded with tok (so
// that special and added tokens written in it are their ids), unless the
// request has guided decoding the text does not satisfy: guided decoding
// wins, as it would in a real engine. A request with guided decoding and
// no canned text that satisfies it gets what the guided decoding asks for
// (mocker.GuidedText: an instance of its JSON schema, or its first
// choice); regex and grammar constraints are not followed, and do not
// stop a canned text. Any other request is generated as usual.
func Script(tok *tokenizer.Tokenizer, entries []Canned, log *slog.Logger) (func(*backend.Request, int) ([]uint32, bool), error) {
	scripts := make([]cannedScript, len(entries))
	for i, e := range entries {
		texts := e.Texts
		if e.Text != nil {
			texts = []string{*e.Text}
		}
		scripts[i].contains, scripts[i].texts = e.PromptContains, texts
		for _, t := range texts {
			ids, err := tok.Encode(t, false)
			if err != nil {
				return nil, fmt.Errorf("--canned-responses: entry %d: encode %q: %w", i, t, err)
			}
			scripts[i].ids = append(scripts[i].ids, ids)
		}
	}
	return func(req *backend.Request, choice int) ([]uint32, bool) {
		guided := req.SamplingOptions.GuidedDecoding
		if s := matchCanned(tok, scripts, req); s != nil {
			k := min(choice, len(s.ids)-1)
			accepted, checked, err := mocker.GuidedAccepts(guided, s.texts[k])
			switch {
			case err != nil:
				log.Warn("mocker: guided decoding not followed", "err", err)
				return s.ids[k], true
			case !checked || accepted:
				return s.ids[k], true
			}
			log.Debug("mocker: the canned answer does not satisfy the request's guided decoding; following the guided decoding", "prompt_contains", s.contains)
		}
		text, ok, err := mocker.GuidedText(guided)
		if err != nil {
			log.Warn("mocker: guided decoding not followed", "err", err)
			return nil, false
		}
		if !ok {
			return nil, false
		}
		ids, err := tok.Encode(text, false)
		if err != nil {
			log.Warn("mocker: guided decoding not followed", "err", err)
			return nil, false
		}
		return ids, true
	}, nil
}

// matchCanned returns the first script whose prompt_contains the
// request's prompt contains, or nil.
func matchCanned(tok *tokenizer.Tokenizer, scripts []cannedScript, req *backend.Request) *cannedScript {
	if len(scripts) == 0 {
		return nil
	}
	prompt, err := tok.Decode(req.TokenIDs, false)
	if err != nil {
		return nil
	}
	for i := range scripts {
		if strings.Contains(prompt, scripts[i].contains) {
			return &scripts[i]
		}
	}
	return nil
}
