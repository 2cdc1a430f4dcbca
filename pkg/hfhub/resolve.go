package hfhub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// maxFileSize bounds one downloaded file; tokenizer.json files run to tens
// of MB.
const maxFileSize = 512 << 20

// Resolve returns a local directory holding the model at modelPath. An
// existing local directory is returned as is. A hub id ("org/name") is
// resolved in the cache (no network access when the revision is already
// there) or downloaded into it, and the snapshot directory
// {HubCache}/models--org--name/snapshots/{commit} is returned. A path
// that does not exist but looks local (looksLocal) is reported without
// any network access. Errors wrap
// ErrInvalidPath, ErrNotFound (unknown model or revision, or no
// tokenizer.json), ErrUnauthorized (set HF_TOKEN) or ErrNotCached (Offline).
func Resolve(ctx context.Context, cfg Config, modelPath string) (string, error) {
	if st, err := os.Stat(modelPath); err == nil {
		if !st.IsDir() {
			return "", fmt.Errorf("%w: %s is a file; --model-path wants a model directory or a hub id", ErrInvalidPath, modelPath)
		}
		return modelPath, nil
	}
	if why, local := looksLocal(modelPath); local {
		return "", fmt.Errorf("%w: model directory %s does not exist (taken for a local path, not a Hugging Face hub id, because %s)",
			ErrInvalidPath, modelPath, why)
	}
	if !IsHubID(modelPath) {
		return "", fmt.Errorf("%w: %q is neither an existing directory nor a Hugging Face hub id (org/name)", ErrInvalidPath, modelPath)
	}
	return resolveRepo(ctx, cfg, modelPath, modelFiles)
}

// fileSet is what one kind of repository needs from the hub: the files
// to download (those it lacks are marked absent) and the check that what
// the hub has suffices.
type fileSet struct {
	kind  string   // "model", "LoRA adapter": for messages
	files []string // in download order
	// missing names what the repo lacks of the required files ("" when
	// nothing); has reports whether the repo (on the hub, or in the
	// cache) has a file.
	missing func(has func(file string) bool) string
}

// modelFiles are a model's files: Files, tokenizer.json required.
var modelFiles = fileSet{kind: "model", files: Files, missing: func(has func(string) bool) string {
	if has(requiredFile) {
		return ""
	}
	return requiredFile + "; a Hugging Face fast tokenizer is required"
}}

// resolveRepo resolves hub repository id to a snapshot directory with the
// files of set, from the cache or downloaded.
func resolveRepo(ctx context.Context, cfg Config, id string, set fileSet) (string, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return "", err
	}
	if strings.Contains(cfg.Revision, "..") || strings.HasPrefix(cfg.Revision, "/") {
		return "", fmt.Errorf("%w: revision %q", ErrInvalidPath, cfg.Revision)
	}
	r := newRepo(cfg.HubCache, id)
	log := cfg.Logger.With("model", id, "revision", cfg.Revision)

	if commit, err := r.cachedCommit(cfg.Revision); err == nil && r.complete(commit, set) {
		log.Debug("hfhub: using cached snapshot", "commit", commit)
		return r.snapshot(commit), nil
	}
	if cfg.Offline {
		return "", fmt.Errorf("%w: model %s revision %s is not (completely) in %s and HF_HUB_OFFLINE is set; download it once online",
			ErrNotCached, id, cfg.Revision, cfg.HubCache)
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}

	c := client{cfg: cfg}
	info, err := c.info(ctx, id, cfg.Revision)
	if err != nil {
		return "", err
	}
	commit := info.SHA
	log.Debug("hfhub: resolved revision", "commit", commit, "files", len(info.Siblings))
	onHub := map[string]bool{}
	for _, s := range info.Siblings {
		onHub[s.RFilename] = true
	}
	if what := set.missing(func(f string) bool { return onHub[f] }); what != "" {
		return "", fmt.Errorf("%w: %s %s at %s (%s) has no %s", ErrNotFound, set.kind, id, cfg.Revision, commit, what)
	}
	for _, f := range set.files {
		if !onHub[f] {
			if err := r.markAbsent(commit, f); err != nil {
				return "", err
			}
			continue
		}
		dst := filepath.Join(r.snapshot(commit), f)
		if exists(dst) {
			fmt.Fprintf(cfg.Progress, "%s: %s cached\n", id, f)
			continue
		}
		n, err := fetch(ctx, c, r, commit, f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(cfg.Progress, "%s: %s %s\n", id, f, humanSize(n))
		log.Debug("hfhub: downloaded", "file", f, "bytes", n)
	}
	if cfg.Revision != commit {
		if err := writeAtomic(r.ref(cfg.Revision), []byte(commit)); err != nil {
			return "", err
		}
	}
	return r.snapshot(commit), nil
}

// fetch downloads one file into blobs/ and links it from the snapshot. It
// returns the file's size.
func fetch(ctx context.Context, c client, r repo, commit, file string) (int64, error) {
	resp, hdr, err := c.download(ctx, r.id, commit, file)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()

	blobs := filepath.Join(r.dir, "blobs")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		return 0, fmt.Errorf("hfhub: %w", err)
	}
	tmp, err := os.CreateTemp(blobs, ".tmp-*.incomplete")
	if err != nil {
		return 0, fmt.Errorf("hfhub: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(resp.Body, maxFileSize+1))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("hfhub: download %s of %s: %w", file, r.id, err)
	}
	if n > maxFileSize {
		return 0, fmt.Errorf("hfhub: %s of %s is larger than %d bytes", file, r.id, maxFileSize)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return 0, fmt.Errorf("hfhub: download %s of %s: got %d of %d bytes", file, r.id, n, resp.ContentLength)
	}
	blob := hdr.etag
	if blob == "" {
		blob = hex.EncodeToString(h.Sum(nil))
	}
	if err := os.Rename(tmp.Name(), r.blob(blob)); err != nil {
		return 0, fmt.Errorf("hfhub: %w", err)
	}
	if err := linkAtomic(filepath.Join("..", "..", "blobs", blob), filepath.Join(r.snapshot(commit), file)); err != nil {
		return 0, err
	}
	return n, nil
}

func humanSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
