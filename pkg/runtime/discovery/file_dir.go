package discovery

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// scan reads the live entries under prefix.
func (f *File) scan(prefix string) (snapshot, error) {
	ents, err := os.ReadDir(f.dir)
	if err != nil {
		return nil, fmt.Errorf("discovery: read %s: %w", f.dir, err)
	}
	now := time.Now()
	s := make(snapshot)
	for _, ent := range ents {
		name := ent.Name()
		if strings.HasPrefix(name, ".") {
			continue // temporary file
		}
		key, err := decodeKey(name)
		if err != nil || !strings.HasPrefix(key, prefix) {
			continue
		}
		v, ok, err := f.read(filepath.Join(f.dir, name), now)
		if err != nil {
			return nil, fmt.Errorf("discovery: read %q: %w", key, err)
		}
		if ok {
			s[key] = v
		}
	}
	return s, nil
}

// read returns the content of path, and false if it is missing or older
// than the TTL at now.
func (f *File) read(path string, now time.Time) ([]byte, bool, error) {
	fh, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer fh.Close()
	info, err := fh.Stat()
	if err != nil {
		return nil, false, err
	}
	if !info.Mode().IsRegular() || now.Sub(info.ModTime()) > f.ttl {
		return nil, false, nil
	}
	var b bytes.Buffer
	if _, err := b.ReadFrom(fh); err != nil {
		return nil, false, err
	}
	return b.Bytes(), true, nil
}

// writeTemp writes value to a new temporary file in the directory and
// returns its path.
func (f *File) writeTemp(value []byte) (string, error) {
	fh, err := os.CreateTemp(f.dir, tmpPrefix+"*")
	if err != nil {
		return "", err
	}
	err = fh.Chmod(0o644) // readable by the other processes
	if err == nil {
		_, err = fh.Write(value)
	}
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(fh.Name())
		return "", err
	}
	return fh.Name(), nil
}

// path returns the file of key.
func (f *File) path(key string) string {
	return filepath.Join(f.dir, encodeKey(key))
}

// maxNameLen is the longest file name most file systems accept.
const maxNameLen = 255

// checkKey rejects keys that cannot be file names.
func checkKey(key string) error {
	if key == "" {
		return errors.New("discovery: empty key")
	}
	if n := len(encodeKey(key)); n > maxNameLen {
		return fmt.Errorf("discovery: key %.40q...: encoded name is %d bytes, the limit is %d", key, n, maxNameLen)
	}
	return nil
}
