package reasoning

import "strings"

// indexAny returns the position of the earliest marker in s and that
// marker (the longest one when two start at the same place), or -1.
func indexAny(s string, markers []string) (int, string) {
	at, found := -1, ""
	for _, m := range markers {
		i := strings.Index(s, m)
		if i < 0 {
			continue
		}
		if at < 0 || i < at || (i == at && len(m) > len(found)) {
			at, found = i, m
		}
	}
	return at, found
}

// prefixAny returns the marker s starts with, or "".
func prefixAny(s string, markers []string) string {
	found := ""
	for _, m := range markers {
		if strings.HasPrefix(s, m) && len(m) > len(found) {
			found = m
		}
	}
	return found
}

// partialTail returns the length of the longest tail of s that is a proper
// prefix of one of the markers: text that may still become a marker when
// the next delta arrives and so must be held back.
func partialTail(s string, markers []string) int {
	longest := 0
	for _, m := range markers {
		n := min(len(m)-1, len(s))
		for ; n > longest; n-- {
			if strings.HasSuffix(s, m[:n]) {
				longest = n
				break
			}
		}
	}
	return longest
}

// isPartial reports whether s is a proper prefix of one of the markers.
func isPartial(s string, markers []string) bool {
	for _, m := range markers {
		if len(s) < len(m) && strings.HasPrefix(m, s) {
			return true
		}
	}
	return false
}
