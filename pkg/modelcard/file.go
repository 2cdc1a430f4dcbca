package modelcard

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// File is a model file named by the card: the reference system's
// CheckedFile (path + checksum) plus its size. The card in discovery
// carries only this reference; the contents travel out of band (a frontend
// fetches them from the model's workers by checksum, see FileRequest) and
// are attached with SetContents. A File read from a card of the previous
// format, which embedded the contents as "contents", arrives loaded.
type File struct {
	// Path is the file's name relative to the model directory
	// ("tokenizer.json"), the same on every machine.
	Path string `json:"path"`
	// Checksum is "sha256:<hex>" of the contents: the file's identity.
	Checksum string `json:"checksum"`
	// Size is the length of the contents in bytes.
	Size int64 `json:"size"`

	contents []byte // nil until loaded
}

// NewFile returns a loaded File for contents, with its checksum and size.
// It fails with ErrInvalid when contents is not valid UTF-8 (model files
// are JSON or Jinja text).
func NewFile(path string, contents []byte) (*File, error) {
	if !utf8.Valid(contents) {
		return nil, fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalid, path)
	}
	return &File{Path: path, Checksum: sha256Sum(contents), Size: int64(len(contents)), contents: contents}, nil
}

// Loaded reports whether the contents are attached (a nil File counts as
// loaded: there is nothing to fetch).
func (f *File) Loaded() bool { return f == nil || f.contents != nil }

// Bytes returns the file's contents, or nil when they are not loaded. The
// slice is shared: do not modify it.
func (f *File) Bytes() []byte {
	if f == nil {
		return nil
	}
	return f.contents
}

// SetContents attaches the file's contents after checking them against
// Size and Checksum; a mismatch wraps ErrChecksum and leaves f unloaded.
func (f *File) SetContents(b []byte) error {
	if int64(len(b)) != f.Size {
		return fmt.Errorf("%w: file %s is %d bytes, the card says %d", ErrChecksum, f.Path, len(b), f.Size)
	}
	if got := sha256Sum(b); got != f.Checksum {
		return fmt.Errorf("%w: file %s has checksum %s, contents hash to %s", ErrChecksum, f.Path, f.Checksum, got)
	}
	if !utf8.Valid(b) {
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalid, f.Path)
	}
	f.contents = b
	return nil
}

// Verify checks loaded contents against Checksum; a mismatch wraps
// ErrChecksum. An unloaded file verifies.
func (f *File) Verify() error {
	if f == nil || f.contents == nil {
		return nil
	}
	if got := sha256Sum(f.contents); got != f.Checksum {
		return fmt.Errorf("%w: file %s has checksum %s, contents hash to %s", ErrChecksum, f.Path, f.Checksum, got)
	}
	return nil
}

// UnmarshalJSON decodes a file reference. A "contents" member (cards of
// the previous format embedded the file) is taken as the loaded contents
// and verified; a missing "size" is then taken from it.
func (f *File) UnmarshalJSON(b []byte) error {
	var w struct {
		Path     string  `json:"path"`
		Checksum string  `json:"checksum"`
		Size     *int64  `json:"size"`
		Contents *string `json:"contents"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*f = File{Path: w.Path, Checksum: w.Checksum}
	if w.Size != nil {
		f.Size = *w.Size
	}
	if w.Contents != nil {
		if w.Size == nil {
			f.Size = int64(len(*w.Contents))
		}
		return f.SetContents([]byte(*w.Contents))
	}
	return nil
}

func sha256Sum(b []byte) string {
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}
