package loadgen

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// errNoDone is a stream that ended cleanly without "data: [DONE]".
var errNoDone = errors.New("loadgen: stream ended without [DONE]")

// sseReader splits a text/event-stream body into events.
type sseReader struct {
	br   *bufio.Reader
	line []byte // a line longer than br's buffer, assembled
	data []byte
}

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{br: bufio.NewReaderSize(r, 8<<10)}
}

// next returns the next event's name ("" for unnamed events) and data
// (the data lines joined by "\n"). The data is valid until the next call.
// A body that ends before the event is complete returns errNoDone on a
// clean end and the read error otherwise.
func (s *sseReader) next() (name string, data []byte, err error) {
	s.data = s.data[:0]
	hasData := false
	for {
		line, err := s.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return "", nil, errNoDone
			}
			return "", nil, err
		}
		if len(line) == 0 {
			if hasData {
				return name, s.data, nil
			}
			name = "" // an event without data is dropped
			continue
		}
		if line[0] == ':' {
			continue // comment
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			name = string(value)
		case "data":
			if hasData {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, value...)
			hasData = true
		}
	}
}

// readLine returns one line without its "\n" or "\r\n". A body that
// ends inside a line returns the read error (io.EOF on a clean end).
func (s *sseReader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		chunk, err := s.br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			s.line = append(s.line, chunk...)
			continue
		}
		if err != nil {
			return nil, err
		}
		line := chunk
		if len(s.line) > 0 {
			s.line = append(s.line, chunk...)
			line = s.line
		}
		line = line[:len(line)-1]
		return bytes.TrimSuffix(line, []byte("\r")), nil
	}
}
