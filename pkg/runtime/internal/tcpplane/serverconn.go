package tcpplane

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// serverConn reads the request frames of one connection, calls the
// handlers in order and writes the acks in the same order. Acks are
// buffered and flushed only before a read that would block, so a pipelined
// burst of requests is answered with few writes.
type serverConn struct {
	s       *Server
	br      *bufio.Reader
	bw      *bufio.Writer
	scratch []byte // path and headers of the current frame
}

func newServerConn(s *Server, nc io.ReadWriter) *serverConn {
	return &serverConn{
		s:  s,
		br: bufio.NewReaderSize(nc, 32<<10),
		bw: bufio.NewWriterSize(nc, 4<<10),
	}
}

// serve handles frames until the peer closes (nil) or an error.
func (c *serverConn) serve() error {
	for {
		if err := c.serveOne(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// serveOne reads one request frame, dispatches it and queues its ack. It
// returns io.EOF when the peer closed cleanly between frames.
func (c *serverConn) serveOne() error {
	var n [4]byte
	if err := c.readFull(n[:2]); err != nil {
		return err // io.EOF here is a clean close
	}
	pathLen := int(binary.BigEndian.Uint16(n[:2]))
	c.scratch = c.scratch[:0]
	path, err := c.readScratch(pathLen)
	if err != nil {
		return midFrame(err)
	}
	if err := c.readFull(n[:2]); err != nil {
		return midFrame(err)
	}
	hdrLen := int(binary.BigEndian.Uint16(n[:2]))
	hdr, err := c.readScratch(hdrLen)
	if err != nil {
		return midFrame(err)
	}
	path = c.scratch[:pathLen] // readScratch may have moved scratch
	if err := c.readFull(n[:4]); err != nil {
		return midFrame(err)
	}
	payloadLen := int64(binary.BigEndian.Uint32(n[:4]))

	if int64(pathLen)+int64(hdrLen)+payloadLen > int64(c.s.maxSize) {
		c.flushIfBlocking(int(payloadLen))
		if _, err := c.br.Discard(int(payloadLen)); err != nil {
			return midFrame(err)
		}
		return c.ack(ackTooLarge)
	}
	var payload []byte
	if payloadLen > 0 {
		payload = make([]byte, payloadLen)
		if err := c.readFull(payload); err != nil {
			return midFrame(err)
		}
	}

	h := c.s.handler(path)
	if h == nil {
		return c.ack(ackUnknownEndpoint + string(path))
	}
	headers, err := decodeHeaders(hdr)
	if err != nil {
		return c.ack(ackBadHeaders + err.Error())
	}
	if err := h(headers, payload); err != nil {
		text := err.Error()
		if text == "" {
			text = "rejected"
		}
		return c.ack(text)
	}
	return c.ack("")
}

// readScratch appends n bytes from the connection to c.scratch and returns
// them.
func (c *serverConn) readScratch(n int) ([]byte, error) {
	start := len(c.scratch)
	if cap(c.scratch)-start < n {
		grown := make([]byte, start, start+n+512)
		copy(grown, c.scratch)
		c.scratch = grown
	}
	c.scratch = c.scratch[:start+n]
	b := c.scratch[start:]
	return b, c.readFull(b)
}

// readFull fills b, flushing pending acks first if the read would block.
func (c *serverConn) readFull(b []byte) error {
	c.flushIfBlocking(len(b))
	_, err := io.ReadFull(c.br, b)
	return err
}

// flushIfBlocking flushes pending acks when fewer than n bytes are buffered,
// that is when the next read may wait for the peer, which may in turn be
// waiting for those acks.
func (c *serverConn) flushIfBlocking(n int) {
	if c.br.Buffered() < n && c.bw.Buffered() > 0 {
		// A write error surfaces on the next read or ack.
		_ = c.bw.Flush()
	}
}

func (c *serverConn) ack(text string) error {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(text)))
	c.bw.Write(n[:])
	if _, err := c.bw.WriteString(text); err != nil {
		return fmt.Errorf("tcpplane: write ack: %w", err)
	}
	if c.br.Buffered() == 0 {
		if err := c.bw.Flush(); err != nil {
			return fmt.Errorf("tcpplane: write ack: %w", err)
		}
	}
	return nil
}

// midFrame turns an EOF inside a frame into a protocol error.
func midFrame(err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("%w: truncated frame: %w", ErrProtocol, err)
}
