package loadgen

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestSyntheticPromptsAreUniqueWithExactWordCount(t *testing.T) {
	s := NewSynthetic(64, 3)
	seen := map[string]bool{}
	for n := range 200 {
		p := s.Prompt(n)
		w := strings.Fields(p.Text)
		if len(w) != 64 || p.Words != 64 {
			t.Fatalf("prompt %d: %d words (Words=%d), want 64", n, len(w), p.Words)
		}
		if w[0] != strconv.Itoa(n) {
			t.Fatalf("prompt %d starts with %q, want the request number", n, w[0])
		}
		if seen[p.Text] {
			t.Fatalf("prompt %d repeats an earlier prompt", n)
		}
		seen[p.Text] = true
	}
	if NewSynthetic(64, 3).Prompt(5) != s.Prompt(5) {
		t.Error("same seed and request number gave different prompts")
	}
	if got := NewSynthetic(1, 3).Prompt(9).Text; got != "9" {
		t.Errorf("one-word prompt = %q, want the request number", got)
	}
}

func TestSharedPrefixGroups(t *testing.T) {
	const groups, prefix, suffix = 4, 50, 10
	s := NewSharedPrefix(groups, prefix, suffix, 11)
	byGroup := map[int][]string{}
	seen := map[string]bool{}
	for n := range 400 {
		p := s.Prompt(n)
		w := strings.Fields(p.Text)
		if len(w) != prefix+suffix || p.Words != prefix+suffix {
			t.Fatalf("prompt %d: %d words (Words=%d), want %d", n, len(w), p.Words, prefix+suffix)
		}
		if w[prefix] != strconv.Itoa(n) {
			t.Fatalf("prompt %d: suffix starts with %q, want the request number", n, w[prefix])
		}
		if p.Group < 0 || p.Group >= groups {
			t.Fatalf("prompt %d: group %d out of range", n, p.Group)
		}
		if seen[p.Text] {
			t.Fatalf("prompt %d repeats an earlier prompt", n)
		}
		seen[p.Text] = true
		if first, ok := byGroup[p.Group]; ok {
			if !slices.Equal(first, w[:prefix]) {
				t.Fatalf("prompt %d: prefix differs from its group's", n)
			}
		} else {
			byGroup[p.Group] = w[:prefix]
		}
	}
	if len(byGroup) != groups {
		t.Fatalf("400 requests used %d groups, want all %d", len(byGroup), groups)
	}
	for a := range groups {
		for b := a + 1; b < groups; b++ {
			if slices.Equal(byGroup[a], byGroup[b]) {
				t.Errorf("groups %d and %d share their prefix", a, b)
			}
		}
	}
}

func TestSharedPrefixChoosesGroupsUniformly(t *testing.T) {
	const groups, n = 5, 10000
	s := NewSharedPrefix(groups, 1, 1, 1)
	counts := make([]int, groups)
	for i := range n {
		counts[s.Prompt(i).Group]++
	}
	for g, c := range counts {
		if c < n/groups*9/10 || c > n/groups*11/10 {
			t.Errorf("group %d chosen %d times of %d, want about %d", g, c, n, n/groups)
		}
	}
}

func TestSharedPrefixWithoutPrefix(t *testing.T) {
	p := NewSharedPrefix(3, 0, 4, 1).Prompt(12)
	if w := strings.Fields(p.Text); len(w) != 4 || w[0] != "12" || strings.HasPrefix(p.Text, " ") {
		t.Errorf("prompt = %q, want 4 words starting with the request number", p.Text)
	}
}
