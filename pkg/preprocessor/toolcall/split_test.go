package toolcall_test

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/dynamo-go/dynamo/pkg/preprocessor/toolcall"
)

// randomSplit cuts s into pieces at random byte offsets, mid-marker and
// mid-rune included; some pieces are empty.
func randomSplit(r *rand.Rand, s string) []string {
	var pieces []string
	for len(s) > 0 {
		n := r.Intn(min(len(s), 12) + 1)
		if r.Intn(8) == 0 {
			n = 0
		}
		pieces = append(pieces, s[:n])
		s = s[n:]
	}
	return pieces
}

// streamed feeds pieces to a fresh Stream, checks the shape of the deltas
// it yields (see checkDeltas), and folds them.
func streamed(t *testing.T, p *toolcall.Parser, tools []string, pieces []string) (string, []toolcall.Call) {
	t.Helper()
	s := p.NewStream(tools)
	var all []toolcall.Delta
	for _, piece := range pieces {
		ds := s.Push(piece)
		for _, d := range ds {
			text := d.Content
			if d.Call != nil {
				text = d.Call.Arguments
			}
			if !utf8.ValidString(text) {
				t.Fatalf("Push(%q) released %q, which ends inside a UTF-8 sequence", piece, text)
			}
		}
		all = append(all, ds...)
	}
	all = append(all, s.Finish()...)
	checkDeltas(t, all)
	return toolcall.Fold(all)
}

// checkDeltas checks the streaming shape of a Stream's deltas: calls are
// numbered from 0 in order, a call's first delta (and only that one)
// names it, its deltas are not interleaved with another call's, and no
// delta is empty.
func checkDeltas(t *testing.T, ds []toolcall.Delta) {
	t.Helper()
	cur := -1
	for i, d := range ds {
		if d.Call == nil {
			if d.Content == "" {
				t.Fatalf("delta %d is empty: %+v", i, ds)
			}
			continue
		}
		c := d.Call
		switch {
		case c.Index == cur+1:
			if c.Name == "" {
				t.Fatalf("delta %d starts call %d without a name: %s", i, c.Index, show(ds))
			}
			cur = c.Index
		case c.Index != cur:
			t.Fatalf("delta %d is of call %d while call %d is the latest: %s", i, c.Index, cur, show(ds))
		case c.Name != "" || c.ID != "":
			t.Fatalf("delta %d names call %d again: %s", i, c.Index, show(ds))
		case c.Arguments == "":
			t.Fatalf("delta %d of call %d is empty: %s", i, c.Index, show(ds))
		}
	}
}

func show(ds []toolcall.Delta) string {
	var b []string
	for _, d := range ds {
		if d.Call == nil {
			b = append(b, fmt.Sprintf("content %q", d.Content))
		} else {
			b = append(b, fmt.Sprintf("call %d %q %q %q", d.Call.Index, d.Call.ID, d.Call.Name, d.Call.Arguments))
		}
	}
	return "[" + strings.Join(b, ", ") + "]"
}

// TestAnySplitMatchesParse checks the streaming invariant: however an
// output is cut into deltas, the Stream yields the content and calls Parse
// does. Besides each golden output it tries pairs of outputs run together,
// which puts calls, text and broken calls next to each other.
func TestAnySplitMatchesParse(t *testing.T) {
	byParser := map[string][]golden{}
	for _, g := range goldens {
		byParser[g.parser] = append(byParser[g.parser], g)
	}
	var cases []golden
	for _, gs := range byParser {
		cases = append(cases, gs...)
		for i := range gs {
			for j := range gs {
				a, b := gs[i], gs[j]
				cases = append(cases, golden{
					name:   a.name + " + " + b.name,
					parser: a.parser,
					tools:  a.tools,
					output: a.output + b.output,
				})
			}
		}
	}
	for ci, g := range cases {
		p := lookup(t, g.parser)
		wantContent, wantCalls := p.Parse(g.output, g.tools)
		for seed := range 25 {
			r := rand.New(rand.NewSource(int64(ci*1000 + seed)))
			pieces := randomSplit(r, g.output)
			content, calls := streamed(t, p, g.tools, pieces)
			if content != wantContent || !cmp.Equal(calls, wantCalls, cmpopts.EquateEmpty()) {
				t.Fatalf("%s/%s split %s:\ncontent %q\n   want %q\ncalls %v\n want %v",
					g.parser, g.name, fmt.Sprintf("%q", pieces), content, wantContent, calls, wantCalls)
			}
		}
	}
}

// fragments are the pieces random outputs are built from: every format's
// markers, JSON and Python punctuation, names and text.
var fragments = []string{
	"<tool_call>", "</tool_call>", "<|python_tag|>", "[TOOL_CALLS]", "[ARGS]", "[/TOOL_CALLS]",
	"functools", "<|python_start|>", "<|python_end|>", "<TOOLCALL>", "</TOOLCALL>",
	"<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>",
	"<function=f>", "</function>", "<parameter=k>", "</parameter>",
	"<|start|>assistant", "<|channel|>", "final", "analysis", "commentary", " to=functions.f", " to=browser.x",
	"<|constrain|>json", "<|message|>", "<|end|>", "<|call|>", "<|return|>",
	`{"name": "f", "arguments": {"a": 1}}`, `{"name":"g","parameters":{}}`, `[{"name": "f", "arguments": {}}]`,
	`{"name": "f", "arguments": {"a": "`, `{"a": [1, 2.5e3, true, null]`, `"x\\"y"`, `, "id": "c1"`, `{"arguments": "{}", "name": "f"}`,
	"[f(a=1)]", "f(x='y')", "{", "}", "[", "]", "(", ")", `"`, "'", `\`, ";", ",", "\n", " ",
	"hello", "é", "☀", "<", "<|", "```json\n", "\n```",
}

// TestRandomOutputsAnySplit checks the streaming invariant on random
// mixtures of every format's pieces, where markers, broken calls and
// prefixes of markers meet in ways no golden case spells out.
func TestRandomOutputsAnySplit(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for _, name := range append(toolcall.Names(), "required", "named:f") {
		p := lookup(t, name)
		for range 150 {
			var b []byte
			for range r.Intn(12) + 1 {
				b = append(b, fragments[r.Intn(len(fragments))]...)
			}
			output := string(b)
			var tools []string
			if r.Intn(2) == 0 {
				tools = []string{"f"}
			}
			wantContent, wantCalls := p.Parse(output, tools)
			// Only a call takes text out of the content (and harmony's
			// markers and analysis): nothing else is ever dropped.
			if name != "harmony" && len(wantCalls) == 0 && wantContent != output {
				t.Fatalf("%s: output %q with no call gave content %q", name, output, wantContent)
			}
			for range 8 {
				content, calls := streamed(t, p, tools, randomSplit(r, output))
				if content != wantContent || !cmp.Equal(calls, wantCalls, cmpopts.EquateEmpty()) {
					t.Fatalf("%s: output %q:\ncontent %q\n   want %q\ncalls %v\n want %v",
						name, output, content, wantContent, calls, wantCalls)
				}
			}
		}
	}
}
