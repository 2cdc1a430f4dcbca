package discovery

import (
	"errors"
	"strings"
)

// tmpPrefix starts the names of the file store's temporary files, which
// readers ignore.
const tmpPrefix = ".tmp_"

const upperHex = "0123456789ABCDEF"

// encodeKey returns the file name of key: every byte that is not an ASCII
// letter or digit becomes %XX (upper-case hex), so keys containing '/' live
// flat in one directory and no name starts with '.'.
func encodeKey(key string) string {
	var b strings.Builder
	b.Grow(len(key))
	for i := 0; i < len(key); i++ {
		c := key[i]
		if isAlnum(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(upperHex[c>>4])
		b.WriteByte(upperHex[c&0xf])
	}
	return b.String()
}

var errBadName = errors.New("discovery: not an encoded key")

// decodeKey reverses encodeKey. It fails for names encodeKey never returns
// (temporary files, stray files), which the store then ignores.
func decodeKey(name string) (string, error) {
	var b strings.Builder
	b.Grow(len(name))
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case isAlnum(c):
			b.WriteByte(c)
		case c == '%' && i+2 < len(name):
			hi, lo := unhex(name[i+1]), unhex(name[i+2])
			if hi < 0 || lo < 0 {
				return "", errBadName
			}
			d := byte(hi<<4 | lo)
			if isAlnum(d) {
				return "", errBadName // not canonical
			}
			b.WriteByte(d)
			i += 2
		default:
			return "", errBadName
		}
	}
	return b.String(), nil
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// unhex returns the value of an upper-case hex digit, or -1.
func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
