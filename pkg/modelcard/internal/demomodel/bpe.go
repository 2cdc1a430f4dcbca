package demomodel

import (
	"regexp"
	"sort"
	"strings"
)

// byteChars is GPT-2's bytes_to_unicode table: every byte maps to a
// printable rune, in GPT-2's order (printable bytes first); the position in
// this list is the byte token's id.
func byteChars() (order []byte, char map[byte]rune) {
	char = map[byte]rune{}
	for b := 0; b < 256; b++ {
		if b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE && b <= 0xFF {
			order = append(order, byte(b))
			char[byte(b)] = rune(b)
		}
	}
	n := 0
	for b := 0; b < 256; b++ {
		if _, ok := char[byte(b)]; !ok {
			order = append(order, byte(b))
			char[byte(b)] = rune(256 + n)
			n++
		}
	}
	return order, char
}

// pretokenize approximates the GPT-2 pre-tokenizer regex (Go's regexp has no
// look-ahead); it is used only to learn merges, so an approximation is fine.
var pretokenize = regexp.MustCompile(`'s|'t|'re|'ve|'m|'ll|'d| ?\pL+| ?\pN+| ?[^\s\pL\pN]+|\s+`)

// learnMerges learns up to n byte-level BPE merges from text, most
// frequent pair first. Ties are broken by the pair's text, so the result is deterministic.
func learnMerges(text string, n int, char map[byte]rune) [][2]string {
	counts := map[string]int{}
	for _, w := range pretokenize.FindAllString(text, -1) {
		counts[w]++
	}
	type word struct {
		syms  []string
		count int
	}
	var words []word
	keys := make([]string, 0, len(counts))
	for w := range counts {
		keys = append(keys, w)
	}
	sort.Strings(keys)
	for _, w := range keys {
		var syms []string
		for i := 0; i < len(w); i++ {
			syms = append(syms, string(char[w[i]]))
		}
		words = append(words, word{syms, counts[w]})
	}
	var merges [][2]string
	for len(merges) < n {
		pairs := map[[2]string]int{}
		for _, w := range words {
			for i := 0; i+1 < len(w.syms); i++ {
				pairs[[2]string{w.syms[i], w.syms[i+1]}] += w.count
			}
		}
		var best [2]string
		bestN := 0
		for p, c := range pairs {
			if c > bestN || c == bestN && less(p, best) {
				best, bestN = p, c
			}
		}
		if bestN == 0 {
			break
		}
		merges = append(merges, best)
		joined := best[0] + best[1]
		for wi := range words {
			s := words[wi].syms
			out := s[:0:0]
			for i := 0; i < len(s); i++ {
				if i+1 < len(s) && s[i] == best[0] && s[i+1] == best[1] {
					out = append(out, joined)
					i++
					continue
				}
				out = append(out, s[i])
			}
			words[wi].syms = out
		}
	}
	return merges
}

func less(a, b [2]string) bool {
	if a[0] != b[0] {
		return a[0] < b[0]
	}
	return strings.Compare(a[1], b[1]) < 0
}
