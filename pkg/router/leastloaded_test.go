package router

import (
	"testing"
)

// fixedLoads is a load reader with set loads.
type fixedLoads map[uint64]Load

func (f fixedLoads) Loads(ids []uint64) ([]Load, int) {
	out := make([]Load, len(ids))
	for i, id := range ids {
		out[i] = f[id]
	}
	return out, 0
}

func TestLeastLoadedPicksFewestRequestsThenFewestPrefillTokens(t *testing.T) {
	for _, tc := range []struct {
		name  string
		loads fixedLoads
		want  uint64
	}{
		{"fewest requests", fixedLoads{1: {Requests: 3}, 2: {Requests: 1, PrefillTokens: 9000}, 3: {Requests: 2}}, 2},
		{"then fewest prompt tokens in prefill", fixedLoads{1: {Requests: 1, PrefillTokens: 500}, 2: {Requests: 1, PrefillTokens: 20}, 3: {Requests: 1, PrefillTokens: 90}}, 2},
		{"a refusing worker last", fixedLoads{1: {Requests: 4}, 2: {Refusing: true}, 3: {Requests: 5}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &LeastLoaded{loads: tc.loads}
			for range 5 { // whatever the rotation
				if got, err := p.Pick(nil, []uint64{1, 2, 3}); err != nil || got != tc.want {
					t.Fatalf("picked %d (%v), want %d", got, err, tc.want)
				}
			}
		})
	}
}

func TestLeastLoadedSpreadsEqualLoads(t *testing.T) {
	p := &LeastLoaded{loads: fixedLoads{}}
	seen := map[uint64]int{}
	for range 9 {
		id, _ := p.Pick(nil, []uint64{1, 2, 3})
		seen[id]++
	}
	if seen[1] != 3 || seen[2] != 3 || seen[3] != 3 {
		t.Fatalf("picks %v among idle workers, want each 3 times", seen)
	}
}

func TestLeastLoadedWithoutRouterFails(t *testing.T) {
	if _, err := (&LeastLoaded{}).Pick(nil, []uint64{1}); err == nil {
		t.Fatal("a least-loaded policy that reads no loads picked")
	}
}
