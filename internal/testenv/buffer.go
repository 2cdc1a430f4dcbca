package testenv

import (
	"bytes"
	"strings"
	"sync"
)

// Buffer is a bytes.Buffer that a child process or a logger may write
// while the test reads it. The zero value is ready to use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Tail returns the last n lines written.
func (b *Buffer) Tail(n int) string {
	s := strings.TrimSuffix(b.String(), "\n")
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			if n--; n == 0 {
				return s[i+1:]
			}
		}
	}
	return s
}
