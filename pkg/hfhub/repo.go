package hfhub

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Files are the model files a worker needs, in download order. Only
// tokenizer.json is required.
var Files = []string{
	"config.json",
	"tokenizer.json",
	"tokenizer_config.json",
	"generation_config.json",
	"chat_template.jinja",
	"special_tokens_map.json",
}

const requiredFile = "tokenizer.json"

var (
	hubIDPattern  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$`)
	commitPattern = regexp.MustCompile(`^[0-9a-f]{40}$`)
)

// IsHubID reports whether s has the form of a hub repo id, "org/name".
func IsHubID(s string) bool {
	return hubIDPattern.MatchString(s) && !strings.Contains(s, "..")
}

// repo is one model repository in the cache.
type repo struct {
	id  string // org/name
	dir string // {HubCache}/models--org--name
}

func newRepo(hubCache, id string) repo {
	return repo{id: id, dir: filepath.Join(hubCache, "models--"+strings.ReplaceAll(id, "/", "--"))}
}

func (r repo) blob(etag string) string       { return filepath.Join(r.dir, "blobs", etag) }
func (r repo) snapshot(commit string) string { return filepath.Join(r.dir, "snapshots", commit) }
func (r repo) ref(revision string) string {
	return filepath.Join(r.dir, "refs", filepath.FromSlash(revision))
}
func (r repo) noExist(commit, file string) string {
	return filepath.Join(r.dir, ".no_exist", commit, file)
}

// cachedCommit returns the commit a revision points to in the cache: the
// revision itself when it is a commit hash, else refs/{revision}.
func (r repo) cachedCommit(revision string) (string, error) {
	if commitPattern.MatchString(revision) {
		return revision, nil
	}
	b, err := os.ReadFile(r.ref(revision))
	if err != nil {
		return "", err
	}
	commit := strings.TrimSpace(string(b))
	if !commitPattern.MatchString(commit) {
		return "", fmt.Errorf("hfhub: %s holds %q, not a commit hash", r.ref(revision), commit)
	}
	return commit, nil
}

// complete reports whether the snapshot of commit has every file of set,
// either present or marked absent, and has the files set requires.
func (r repo) complete(commit string, set fileSet) bool {
	has := func(f string) bool { return exists(filepath.Join(r.snapshot(commit), f)) }
	for _, f := range set.files {
		if !has(f) && !exists(r.noExist(commit, f)) {
			return false
		}
	}
	return set.missing(has) == ""
}

func exists(path string) bool {
	_, err := os.Stat(path) // follows the snapshot symlink to the blob
	return err == nil
}

// writeAtomic writes data to path through a temporary file in the same
// directory and a rename.
func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("hfhub: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("hfhub: %w", err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("hfhub: write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("hfhub: %w", err)
	}
	return nil
}

// linkAtomic makes path a symlink to target, replacing whatever is there.
func linkAtomic(target, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("hfhub: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-link-*")
	if err != nil {
		return fmt.Errorf("hfhub: %w", err)
	}
	tmp := f.Name()
	f.Close()
	os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return fmt.Errorf("hfhub: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("hfhub: %w", err)
	}
	return nil
}

// markAbsent records that file does not exist in the repo at commit.
func (r repo) markAbsent(commit, file string) error {
	p := r.noExist(commit, file)
	if exists(p) {
		return nil
	}
	return writeAtomic(p, nil)
}
