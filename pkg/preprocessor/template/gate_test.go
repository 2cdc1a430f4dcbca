package template

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// gateDir holds the shared chat-template conformance data (see its README).
const gateDir = "../../../../shared/testdata/chat_templates"

var frozenNow = func() time.Time { return time.Date(2025, 7, 10, 12, 0, 0, 0, time.UTC) }

func readGate(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(gateDir, name))
	if errors.Is(err, os.ErrNotExist) {
		t.Skipf("gate data %s not found (expected at %s); skipping", name, gateDir)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decodeList(t *testing.T, b []byte) []*OrderedMap {
	t.Helper()
	v, err := DecodeJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	var out []*OrderedMap
	for _, x := range v.([]any) {
		out = append(out, x.(*OrderedMap))
	}
	return out
}

func getS(m *OrderedMap, k string) string { v, _ := m.Get(k); s, _ := v.(string); return s }

func render(src string, ctx *OrderedMap, d Dialect) (string, error) {
	tmpl, err := Compile(src, Options{Now: frozenNow, Dialect: d})
	if err != nil {
		return "", err
	}
	return tmpl.Render(ctx)
}

// tally counts one gate's results; report logs the GATE line and fails
// the test when a case failed or no case ran.
type tally struct {
	name       string
	dialect    Dialect
	pass, fail int
	note       string // appended to the GATE line
}

func (ta *tally) record(ok bool) {
	if ok {
		ta.pass++
	} else {
		ta.fail++
	}
}

func (ta *tally) report(t *testing.T) {
	t.Helper()
	t.Logf("GATE %s [%s]: %d/%d pass%s", ta.name, ta.dialect, ta.pass, ta.pass+ta.fail, ta.note)
	if ta.pass+ta.fail == 0 {
		t.Errorf("GATE %s [%s]: no cases ran", ta.name, ta.dialect)
	}
	if ta.fail > 0 {
		t.Errorf("GATE %s [%s]: %d cases failed", ta.name, ta.dialect, ta.fail)
	}
}

// TestGateUnit runs the @huggingface/jinja unit cases under DialectHFJS,
// whose semantics they encode. TestPythonParity covers them under
// DialectPython.
func TestGateUnit(t *testing.T) {
	cases := decodeList(t, readGate(t, "hfjinja_unit_cases.json"))
	ta := &tally{name: "hfjinja_unit_cases.json", dialect: DialectHFJS}
	defer ta.report(t)
	for _, c := range cases {
		ok := t.Run(getS(c, "name"), func(t *testing.T) {
			ctxV, _ := c.Get("context")
			ctx, _ := ctxV.(*OrderedMap)
			got, err := render(getS(c, "template"), ctx, DialectHFJS)
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			if want := getS(c, "expected"); got != want {
				t.Errorf("got  %q\nwant %q", got, want)
			}
		})
		ta.record(ok)
	}
}

// pythonE2ETargets lists the e2e cases whose target is @huggingface/jinja
// output that Python jinja2 does not produce, with a fragment that Python's
// output must contain. Under DialectPython these cases are checked against
// the Python oracle's output instead of the target.
var pythonE2ETargets = map[string]string{
	// {{ tools|string }}: JSON-like in JS, the Python repr in jinja2.
	"TEST_CUSTOM_TEMPLATES/MadeAgents/Hammer2.1": "[{'type': 'function', 'function': {'name': 'get_current_temperature', ",
}

// TestGateE2E runs the real-template cases under both dialects. Under
// DialectPython the cases in pythonE2ETargets must match Python's real
// output (testdata/pyjinja_expected.jsonl) and must differ from the JS
// target, so the difference stays explicit.
func TestGateE2E(t *testing.T) {
	cases := decodeList(t, readGate(t, "hfjinja_e2e_cases.json"))
	for _, d := range []Dialect{DialectHFJS, DialectPython} {
		t.Run(d.String(), func(t *testing.T) {
			var py map[string]string
			if d == DialectPython {
				py = pyOracle(t, "e2e")
			}
			ta := &tally{name: "hfjinja_e2e_cases.json", dialect: d}
			defer ta.report(t)
			overridden := 0
			for _, c := range cases {
				key := getS(c, "group") + "/" + getS(c, "name")
				ok := t.Run(key, func(t *testing.T) {
					dataV, _ := c.Get("data")
					ctx, _ := dataV.(*OrderedMap)
					want := getS(c, "target")
					if frag, ok := pythonE2ETargets[key]; ok && d == DialectPython {
						overridden++
						pyWant, ok := py[key]
						if !ok {
							t.Fatalf("no Python oracle output for %s", key)
						}
						if pyWant == want {
							t.Fatalf("Python oracle output equals the JS target; drop %s from pythonE2ETargets", key)
						}
						if !strings.Contains(pyWant, frag) {
							t.Fatalf("Python oracle output lacks %q", frag)
						}
						want = pyWant
					}
					got, err := render(getS(c, "chat_template"), ctx, d)
					if err != nil {
						t.Fatalf("render: %v", err)
					}
					if got != want {
						t.Errorf("got  %q\nwant %q", got, want)
					}
				})
				ta.record(ok)
			}
			if d == DialectPython {
				if overridden != len(pythonE2ETargets) {
					t.Errorf("%d of %d Python-specific e2e targets found", overridden, len(pythonE2ETargets))
				}
				ta.note = fmt.Sprintf(" (%d against the JS target, %d against Python's own output)",
					len(cases)-overridden, overridden)
			}
		})
	}
}

// modelTemplate follows transformers' lookup: chat_template.jinja, else
// tokenizer_config.json chat_template (string or list of named templates).
func modelTemplate(t *testing.T, dir string, tools bool) (string, *OrderedMap) {
	t.Helper()
	cfgB, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	cfg := NewOrderedMap()
	if err == nil {
		if err := cfg.UnmarshalJSON(cfgB); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "chat_template.jinja")); err == nil {
		return string(b), cfg
	}
	ct, _ := cfg.Get("chat_template")
	switch x := ct.(type) {
	case string:
		return x, cfg
	case []any:
		byName := map[string]string{}
		for _, e := range x {
			m := e.(*OrderedMap)
			byName[getS(m, "name")] = getS(m, "template")
		}
		if tools {
			if s, ok := byName["tool_use"]; ok {
				return s, cfg
			}
		}
		return byName["default"], cfg
	}
	t.Fatalf("no chat template in %s", dir)
	return "", nil
}

// TestGateModels renders every model template for every request under
// both dialects and compares with expected.jsonl.
func TestGateModels(t *testing.T) {
	data := readGate(t, "expected.jsonl")
	for _, d := range []Dialect{DialectHFJS, DialectPython} {
		t.Run(d.String(), func(t *testing.T) { gateModels(t, data, d) })
	}
}

func gateModels(t *testing.T, data []byte, d Dialect) {
	ta := &tally{name: "expected.jsonl", dialect: d}
	defer ta.report(t)
	noRef := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		rec := NewOrderedMap()
		if err := rec.UnmarshalJSON(sc.Bytes()); err != nil {
			t.Fatal(err)
		}
		model, reqName := getS(rec, "model"), getS(rec, "request")
		wantErr, isErr := rec.Get("error")
		if isErr && model == "smollm3" && strings.Contains(fmt.Sprint(wantErr), "Unknown ObjectValue filter: string") {
			noRef++ // README: no reference (JS renderer limitation)
			continue
		}
		ok := t.Run(model+"/"+reqName, func(t *testing.T) {
			reqB, err := os.ReadFile(filepath.Join(gateDir, "requests", reqName))
			if err != nil {
				t.Fatal(err)
			}
			req := NewOrderedMap()
			if err := req.UnmarshalJSON(reqB); err != nil {
				t.Fatal(err)
			}
			tools, hasTools := req.Get("tools")
			src, cfg := modelTemplate(t, filepath.Join(gateDir, "../models", model), hasTools)
			ctx := NewOrderedMap()
			for _, k := range cfg.Keys() {
				v, _ := cfg.Get(k)
				if !strings.HasSuffix(k, "_token") && k != "additional_special_tokens" {
					continue
				}
				if m, ok := v.(*OrderedMap); ok {
					v, _ = m.Get("content")
				}
				ctx.Set(k, v)
			}
			msgs, _ := req.Get("messages")
			ctx.Set("messages", msgs)
			if hasTools {
				ctx.Set("tools", tools)
			}
			agp, ok := req.Get("add_generation_prompt")
			if !ok {
				agp = false
			}
			ctx.Set("add_generation_prompt", agp)
			if kw, ok := req.Get("kwargs"); ok {
				for _, k := range kw.(*OrderedMap).Keys() {
					v, _ := kw.(*OrderedMap).Get(k)
					ctx.Set(k, v)
				}
			}
			got, err := render(src, ctx, d)
			if isErr {
				if err == nil {
					t.Fatalf("rendered, want error %v", wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			if want := getS(rec, "output"); got != want {
				t.Errorf("got  %q\nwant %q", got, want)
			}
		})
		ta.record(ok)
	}
	t.Logf("expected.jsonl: %d records without reference skipped", noRef)
}
