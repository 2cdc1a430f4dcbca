package modelcard

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"unicode/utf8"
)

// File is a model file embedded in the card: the reference system's
// CheckedFile (path + checksum) plus the contents, so that a frontend needs
// no shared filesystem.
type File struct {
	// Path is the file's name relative to the model directory
	// ("tokenizer.json"), the same on every machine.
	Path string `json:"path"`
	// Checksum is "sha256:<hex>" of Contents.
	Checksum string `json:"checksum"`
	// Contents is the file itself. Model files are JSON or Jinja text, so
	// they must be valid UTF-8.
	Contents string `json:"contents"`
}

// NewFile returns a File for contents, with its checksum. It fails with
// ErrInvalid when contents is not valid UTF-8 (JSON could not carry it
// unchanged).
func NewFile(path string, contents []byte) (*File, error) {
	if !utf8.Valid(contents) {
		return nil, fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalid, path)
	}
	return &File{Path: path, Checksum: sha256Sum(contents), Contents: string(contents)}, nil
}

// Bytes returns the file's contents.
func (f *File) Bytes() []byte {
	if f == nil {
		return nil
	}
	return []byte(f.Contents)
}

// Verify checks Checksum against Contents; a mismatch wraps ErrChecksum.
func (f *File) Verify() error {
	if f == nil {
		return nil
	}
	if got := sha256Sum([]byte(f.Contents)); got != f.Checksum {
		return fmt.Errorf("%w: file %s has checksum %s, contents hash to %s", ErrChecksum, f.Path, f.Checksum, got)
	}
	return nil
}

func sha256Sum(b []byte) string {
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}
