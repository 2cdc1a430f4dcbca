package discovery

import (
	"crypto/rand"
	"encoding/binary"
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
