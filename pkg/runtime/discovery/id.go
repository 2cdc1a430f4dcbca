package discovery

import (
	"crypto/rand"
	"encoding/binary"
	"log/slog"
)

// randomID returns a random non-zero instance id.
func randomID() uint64 {
	var b [8]byte
	for {
		rand.Read(b[:]) // never returns an error (crypto/rand doc)
		if id := binary.BigEndian.Uint64(b[:]); id != 0 {
			return id
		}
	}
}

// orDiscard returns l, or a logger that discards everything if l is nil.
func orDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
