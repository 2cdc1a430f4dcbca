package runtime

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// Envelope is the event plane's wire message (spec kvrouter_mocker.md
// §1.4): every payload Publish sends travels inside one, encoded as
// MessagePack with named fields, the way the reference system's event
// plane writes it. Sequence numbers let a subscriber see lost messages;
// the payload's own encoding is the publisher's business.
type Envelope struct {
	// PublisherID identifies the publisher: the runtime's instance id.
	PublisherID uint64 `msgpack:"publisher_id"`
	// Sequence counts the publisher's messages on one subject, from 0.
	Sequence uint64 `msgpack:"sequence"`
	// PublishedAt is the publication time, Unix milliseconds.
	PublishedAt uint64 `msgpack:"published_at"`
	// Topic is the subject's last dot-separated part (e.g. kv-events).
	Topic string `msgpack:"topic"`
	// Payload is the message.
	Payload []byte `msgpack:"payload"`
	// PublishedAtNs is the publication time, Unix nanoseconds.
	PublishedAtNs uint64 `msgpack:"published_at_ns"`
}

// EncodeEnvelope writes e in its wire form.
func EncodeEnvelope(e Envelope) ([]byte, error) {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.UseCompactInts(true)
	if err := enc.Encode(&e); err != nil {
		return nil, fmt.Errorf("runtime: encode envelope: %w", err)
	}
	return buf.Bytes(), nil
}

// DecodeEnvelope reads an envelope in its wire form; unknown fields are
// skipped.
func DecodeEnvelope(b []byte) (Envelope, error) {
	var e Envelope
	if err := msgpack.Unmarshal(b, &e); err != nil {
		return Envelope{}, fmt.Errorf("runtime: decode envelope: %w", err)
	}
	return e, nil
}

// sequences numbers each subject's messages of one publisher.
type sequences struct {
	m sync.Map // subject -> *atomic.Uint64
}

// next returns the subject's next sequence number, from 0.
func (s *sequences) next(subject string) uint64 {
	c, ok := s.m.Load(subject)
	if !ok {
		c, _ = s.m.LoadOrStore(subject, new(atomic.Uint64))
	}
	return c.(*atomic.Uint64).Add(1) - 1
}

// envelope wraps payload for subject.
func (rt *DistributedRuntime) envelope(subject string, payload []byte) ([]byte, error) {
	now := time.Now()
	return EncodeEnvelope(Envelope{
		PublisherID:   rt.InstanceID(),
		Sequence:      rt.seq.next(subject),
		PublishedAt:   uint64(now.UnixMilli()),
		Topic:         subject[strings.LastIndexByte(subject, '.')+1:],
		Payload:       payload,
		PublishedAtNs: uint64(now.UnixNano()),
	})
}
