package reasoning

import "testing"

// golden is one whole-output case: the text, whether thinking is on, and
// the split a user should see.
type golden struct {
	name      string
	text      string
	off       bool // thinking switched off
	reasoning string
	content   string
}

func mustLookup(t *testing.T, name string) *Parser {
	t.Helper()
	p, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func runGolden(t *testing.T, parser string, cases []golden) {
	t.Helper()
	p := mustLookup(t, parser)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, ct := p.Parse(c.text, !c.off)
			if r != c.reasoning || ct != c.content {
				t.Errorf("%s.Parse(%q, enabled=%v)\n got reasoning %q content %q\nwant reasoning %q content %q",
					parser, c.text, !c.off, r, ct, c.reasoning, c.content)
			}
		})
	}
}

// step is one delta of a streaming transcript and what it must release.
type step struct {
	in, reasoning, content string
}

// finish marks the Finish call in a transcript.
const finish = "\x00finish"

func runTranscript(t *testing.T, parser string, enabled bool, steps []step) {
	t.Helper()
	s := mustLookup(t, parser).NewStream(enabled)
	for i, st := range steps {
		var r, c string
		if st.in == finish {
			r, c = s.Finish()
		} else {
			r, c = s.Push(st.in)
		}
		if r != st.reasoning || c != st.content {
			t.Fatalf("step %d (%q): got reasoning %q content %q, want %q %q", i, st.in, r, c, st.reasoning, st.content)
		}
	}
}
