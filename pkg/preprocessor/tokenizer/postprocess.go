package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
)

// postProcessor adds the special tokens of a single sequence (it only runs
// when Encode is called with addSpecialTokens).
type postProcessor interface {
	process(ids []uint32) []uint32
}

// templatePiece is either a run of special-token ids or the sequence ($A).
type templatePiece struct {
	ids      []uint32
	sequence bool
}

// template is TemplateProcessing restricted to the single-sequence template.
type template []templatePiece

func (t template) process(ids []uint32) []uint32 {
	n := len(ids)
	for _, p := range t {
		n += len(p.ids)
	}
	out := make([]uint32, 0, n)
	for _, p := range t {
		if p.sequence {
			out = append(out, ids...)
		} else {
			out = append(out, p.ids...)
		}
	}
	return out
}

// processorSeq is the Sequence post-processor.
type processorSeq []postProcessor

func (s processorSeq) process(ids []uint32) []uint32 {
	for _, p := range s {
		ids = p.process(ids)
	}
	return ids
}

// noopProcessor is the ByteLevel post-processor (offsets only).
type noopProcessor struct{}

func (noopProcessor) process(ids []uint32) []uint32 { return ids }

type specialTokenJSON struct {
	ID  string   `json:"id"`
	IDs []uint32 `json:"ids"`
}

func postProcessorFromJSON(raw json.RawMessage) (postProcessor, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var h struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		return nil, fmt.Errorf("tokenizer: post_processor: %v", err)
	}
	switch h.Type {
	case "ByteLevel":
		return noopProcessor{}, nil
	case "BertProcessing", "RobertaProcessing":
		var v struct {
			Sep [2]json.RawMessage `json:"sep"`
			Cls [2]json.RawMessage `json:"cls"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("tokenizer: post_processor %s: %v", h.Type, err)
		}
		var sep, cls uint32
		if err := json.Unmarshal(v.Sep[1], &sep); err != nil {
			return nil, fmt.Errorf("tokenizer: post_processor %s: sep: %v", h.Type, err)
		}
		if err := json.Unmarshal(v.Cls[1], &cls); err != nil {
			return nil, fmt.Errorf("tokenizer: post_processor %s: cls: %v", h.Type, err)
		}
		return template{{ids: []uint32{cls}}, {sequence: true}, {ids: []uint32{sep}}}, nil
	case "TemplateProcessing":
		var v struct {
			Single        json.RawMessage             `json:"single"`
			SpecialTokens map[string]specialTokenJSON `json:"special_tokens"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("tokenizer: post_processor TemplateProcessing: %v", err)
		}
		return parseTemplate(v.Single, v.SpecialTokens)
	case "Sequence":
		var v struct {
			Processors []json.RawMessage `json:"processors"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("tokenizer: post_processor Sequence: %v", err)
		}
		var seq processorSeq
		for _, p := range v.Processors {
			pp, err := postProcessorFromJSON(p)
			if err != nil {
				return nil, err
			}
			if pp != nil {
				seq = append(seq, pp)
			}
		}
		return seq, nil
	}
	return nil, fmt.Errorf("tokenizer: unsupported post_processor type %q", h.Type)
}

// parseTemplate accepts the list form ([{"SpecialToken":{"id":..}},
// {"Sequence":{"id":"A"}}]) and the string form ("[CLS] $A [SEP]").
func parseTemplate(raw json.RawMessage, special map[string]specialTokenJSON) (template, error) {
	type pieceJSON struct {
		SpecialToken *struct {
			ID string `json:"id"`
		} `json:"SpecialToken"`
		Sequence *struct {
			ID string `json:"id"`
		} `json:"Sequence"`
	}
	var pieces []pieceJSON
	if err := json.Unmarshal(raw, &pieces); err != nil {
		var s string
		if err2 := json.Unmarshal(raw, &s); err2 != nil {
			return nil, fmt.Errorf("tokenizer: post_processor TemplateProcessing: single: %v", err)
		}
		for _, f := range strings.Fields(s) {
			name, _, _ := strings.Cut(f, ":")
			var p pieceJSON
			if strings.HasPrefix(name, "$") {
				p.Sequence = &struct {
					ID string `json:"id"`
				}{ID: strings.TrimPrefix(name, "$")}
			} else {
				p.SpecialToken = &struct {
					ID string `json:"id"`
				}{ID: name}
			}
			pieces = append(pieces, p)
		}
	}
	var t template
	for _, p := range pieces {
		switch {
		case p.SpecialToken != nil:
			st, ok := special[p.SpecialToken.ID]
			if !ok {
				return nil, fmt.Errorf("tokenizer: post_processor TemplateProcessing: missing special token %q", p.SpecialToken.ID)
			}
			t = append(t, templatePiece{ids: st.IDs})
		case p.Sequence != nil:
			t = append(t, templatePiece{sequence: true})
		}
	}
	return t, nil
}
