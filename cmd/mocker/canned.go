package main

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

// cannedEntry is one entry of the --canned-responses file: the answer of
// the requests whose prompt contains PromptContains. Text answers every
// choice; Texts answers choice i with Texts[i], the last one repeated.
type cannedEntry struct {
	PromptContains string   `json:"prompt_contains"`
	Text           *string  `json:"text"`
	Texts          []string `json:"texts"`
}

// loadCanned reads and checks a --canned-responses file: a JSON list of
// entries, each with a non-empty prompt_contains and either text or a
// non-empty texts.
func loadCanned(path string) ([]cannedEntry, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--canned-responses: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var entries []cannedEntry
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
	ids      [][]uint32 // per choice, the last repeated
}

// newScript returns the engine's Config.Script: a request whose prompt,
// decoded with tok (special tokens kept), contains an entry's
// prompt_contains gets the first such entry's text, encoded with tok (so
// that special and added tokens written in it are their ids); failing
// that, a request with guided decoding gets what it asks for
// (mocker.GuidedText: an instance of its JSON schema, or its first
// choice). Any other request is generated as usual.
func newScript(tok *tokenizer.Tokenizer, entries []cannedEntry, log *slog.Logger) (func(*backend.Request, int) ([]uint32, bool), error) {
	scripts := make([]cannedScript, len(entries))
	for i, e := range entries {
		texts := e.Texts
		if e.Text != nil {
			texts = []string{*e.Text}
		}
		scripts[i].contains = e.PromptContains
		for _, t := range texts {
			ids, err := tok.Encode(t, false)
			if err != nil {
				return nil, fmt.Errorf("--canned-responses: entry %d: encode %q: %w", i, t, err)
			}
			scripts[i].ids = append(scripts[i].ids, ids)
		}
	}
	return func(req *backend.Request, choice int) ([]uint32, bool) {
		if len(scripts) > 0 {
			prompt, err := tok.Decode(req.TokenIDs, false)
			if err == nil {
				for _, s := range scripts {
					if strings.Contains(prompt, s.contains) {
						return s.ids[min(choice, len(s.ids)-1)], true
					}
				}
			}
		}
		text, ok, err := mocker.GuidedText(req.SamplingOptions.GuidedDecoding)
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
