package template

import (
	"bufio"
	"bytes"
	"os"
	"testing"
)

// pyGolden is the Python jinja2 oracle output, produced by
// testdata/pyjinja_oracle.py from the gate cases (file "unit" and "e2e")
// and from testdata/pyjinja_cases.json (file "local").
const pyGolden = "testdata/pyjinja_expected.jsonl"

// pyRecords reads the oracle records of one file kind.
func pyRecords(t *testing.T, file string) []*OrderedMap {
	t.Helper()
	golden, err := os.ReadFile(pyGolden)
	if err != nil {
		t.Fatal(err)
	}
	var out []*OrderedMap
	sc := bufio.NewScanner(bytes.NewReader(golden))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		rec := NewOrderedMap()
		if err := rec.UnmarshalJSON(sc.Bytes()); err != nil {
			t.Fatal(err)
		}
		if getS(rec, "file") == file {
			out = append(out, rec)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// pyOracle maps case name to Python's output for one file kind (cases
// where Python raised are left out).
func pyOracle(t *testing.T, file string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, rec := range pyRecords(t, file) {
		if _, isErr := rec.Get("error"); !isErr {
			m[getS(rec, "name")] = getS(rec, "py")
		}
	}
	return m
}

// pyCase is a template and context to compare with Python.
type pyCase struct {
	src string
	ctx *OrderedMap
}

// checkPython renders each oracle record's case under DialectPython and
// compares: same output, or an error where Python raised.
func checkPython(t *testing.T, gate string, recs []*OrderedMap, cases map[string]pyCase) {
	t.Helper()
	ta := &tally{name: gate, dialect: DialectPython}
	defer ta.report(t)
	if len(recs) != len(cases) {
		t.Errorf("%d oracle records for %d cases: regenerate %s", len(recs), len(cases), pyGolden)
	}
	for _, rec := range recs {
		name := getS(rec, "name")
		ok := t.Run(getS(rec, "file")+"/"+name, func(t *testing.T) {
			c, ok := cases[name]
			if !ok {
				t.Fatalf("oracle record %q has no case: regenerate %s", name, pyGolden)
			}
			got, err := render(c.src, c.ctx, DialectPython)
			if pyErr, isErr := rec.Get("error"); isErr {
				if err == nil {
					t.Errorf("rendered %q, Python raised %v", got, pyErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			if want := getS(rec, "py"); got != want {
				t.Errorf("got  %q\nwant %q", got, want)
			}
		})
		ta.record(ok)
	}
}

// TestPythonParity compares DialectPython with Python jinja2 configured as
// transformers does, on the gate cases. Where the gate files encode
// @huggingface/jinja behaviour, this is the Python answer.
func TestPythonParity(t *testing.T) {
	cases := map[string]pyCase{}
	for _, f := range []struct{ file, tmpl, ctx string }{
		{"hfjinja_unit_cases.json", "template", "context"},
		{"hfjinja_e2e_cases.json", "chat_template", "data"},
	} {
		for _, c := range decodeList(t, readGate(t, f.file)) {
			key := getS(c, "name")
			if g := getS(c, "group"); g != "" {
				key = g + "/" + key
			}
			ctxV, _ := c.Get(f.ctx)
			ctx, _ := ctxV.(*OrderedMap)
			cases[key] = pyCase{getS(c, f.tmpl), ctx}
		}
	}
	recs := append(pyRecords(t, "unit"), pyRecords(t, "e2e")...)
	checkPython(t, "python-jinja2 parity", recs, cases)
}

// TestPythonParityLocal compares DialectPython with Python jinja2 on this
// package's own cases (testdata/pyjinja_cases.json: recursive loops,
// loop.cycle/depth/changed, method keyword arguments, …). It needs no
// shared data.
func TestPythonParityLocal(t *testing.T) {
	b, err := os.ReadFile("testdata/pyjinja_cases.json")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]pyCase{}
	for _, c := range decodeList(t, b) {
		ctxV, _ := c.Get("context")
		ctx, _ := ctxV.(*OrderedMap)
		cases[getS(c, "name")] = pyCase{getS(c, "template"), ctx}
	}
	checkPython(t, "pyjinja_cases.json", pyRecords(t, "local"), cases)
}
