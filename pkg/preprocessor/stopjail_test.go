package preprocessor

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStopJail(t *testing.T) {
	type push struct {
		text      string
		protected bool
	}
	type result struct {
		Emit    string
		Stop    string
		Matched bool
	}
	tests := []struct {
		name    string
		stops   []string
		include bool
		pushes  []push
		want    []result
		flush   string // what flush returns after the pushes
	}{
		{
			name:   "no stops passes text through",
			pushes: []push{{text: "abc"}, {text: ""}, {text: "d"}},
			want:   []result{{Emit: "abc"}, {}, {Emit: "d"}},
		},
		{
			name:   "empty stop strings are ignored",
			stops:  []string{""},
			pushes: []push{{text: "abc"}},
			want:   []result{{Emit: "abc"}},
		},
		{
			name:   "prefix held, then released",
			stops:  []string{"</s>"},
			pushes: []push{{text: "a<"}, {text: "/x"}},
			want:   []result{{Emit: "a"}, {Emit: "</x"}},
		},
		{
			name:   "prefix held until flush",
			stops:  []string{"</s>"},
			pushes: []push{{text: "a</"}},
			want:   []result{{Emit: "a"}},
			flush:  "</",
		},
		{
			name:   "hidden match cuts before the stop string",
			stops:  []string{"</s>"},
			pushes: []push{{text: "a</"}, {text: "s>tail"}},
			want:   []result{{Emit: "a"}, {Stop: "</s>", Matched: true}},
		},
		{
			name:    "visible match cuts after the stop string",
			stops:   []string{"</s>"},
			include: true,
			pushes:  []push{{text: "a</"}, {text: "s>tail"}},
			want:    []result{{Emit: "a"}, {Emit: "</s>", Stop: "</s>", Matched: true}},
		},
		{
			name:   "the longest held suffix wins across stop strings",
			stops:  []string{"abc", "bcd"},
			pushes: []push{{text: "xab"}, {text: "c"}},
			want:   []result{{Emit: "x"}, {Stop: "abc", Matched: true}},
		},
		{
			name:   "hold-back starts on a character boundary",
			stops:  []string{"é!"},
			pushes: []push{{text: "café"}, {text: "?"}, {text: "é"}, {text: "!"}},
			want:   []result{{Emit: "caf"}, {Emit: "é?"}, {}, {Stop: "é!", Matched: true}},
		},
		{
			name:   "a match inside protected text is not a stop",
			stops:  []string{"ab"},
			pushes: []push{{text: "xab", protected: true}, {text: "a", protected: true}, {text: "b"}},
			want:   []result{{Emit: "xab"}, {}, {Stop: "ab", Matched: true}},
		},
		{
			name:   "a match ending after protected text is a stop",
			stops:  []string{"abc"},
			pushes: []push{{text: "xab", protected: true}, {text: "cd"}},
			want:   []result{{Emit: "x"}, {Stop: "abc", Matched: true}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := newStopJail(tc.stops, tc.include)
			var got []result
			for _, p := range tc.pushes {
				emit, stop, matched := j.push(p.text, p.protected)
				got = append(got, result{emit, stop, matched})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("pushes (-want +got):\n%s", diff)
			}
			if f := j.flush(); f != tc.flush {
				t.Errorf("flush = %q, want %q", f, tc.flush)
			}
			if f := j.flush(); f != "" {
				t.Errorf("second flush = %q, want empty", f)
			}
		})
	}
}
