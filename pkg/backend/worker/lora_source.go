package worker

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/hfhub"
)

// loraSource is a parsed adapter source.
type loraSource struct {
	dir      string // a local directory (file:// or an absolute path)
	hubID    string // hf://ORG/NAME
	revision string // hf://ORG/NAME@REVISION; "" for the hub's default
}

// ParseLoraSource checks the form of an adapter source: file:///ABS/DIR,
// an absolute directory path, or hf://ORG/NAME[@REVISION]. It does not
// look at the file system or the hub.
func ParseLoraSource(source string) error {
	_, err := parseLoraSource(source)
	return err
}

func parseLoraSource(source string) (loraSource, error) {
	bad := func(why string) (loraSource, error) {
		return loraSource{}, fmt.Errorf("%w: LoRA source %q: %s (want file:///ABS/DIR, an absolute directory or hf://ORG/NAME[@REVISION])",
			backend.ErrInvalidArgument, source, why)
	}
	switch {
	case source == "":
		return bad("empty")
	case strings.HasPrefix(source, "hf://"):
		id, rev, _ := strings.Cut(strings.TrimPrefix(source, "hf://"), "@")
		if !hfhub.IsHubID(id) {
			return bad("not a hub repository id ORG/NAME")
		}
		if strings.Contains(rev, "..") || strings.HasPrefix(rev, "/") || strings.ContainsAny(rev, " \t\r\n") {
			return bad("bad revision")
		}
		return loraSource{hubID: id, revision: rev}, nil
	case strings.HasPrefix(source, "file://"):
		u, err := url.Parse(source)
		if err != nil {
			return bad(err.Error())
		}
		if u.Host != "" && u.Host != "localhost" {
			return bad("a file URL names no host (file:///ABS/DIR)")
		}
		if !filepath.IsAbs(u.Path) {
			return bad("not an absolute path")
		}
		return loraSource{dir: filepath.Clean(u.Path)}, nil
	case filepath.IsAbs(source):
		return loraSource{dir: filepath.Clean(source)}, nil
	case strings.Contains(source, "://"):
		scheme, _, _ := strings.Cut(source, "://")
		return bad("scheme " + scheme + " is not supported")
	}
	return bad("a relative path")
}

// resolveLoraSource returns the local directory of an adapter source: a
// directory that must exist, or a hub repository's snapshot in the
// Hugging Face cache (downloaded once, then used from the cache).
func resolveLoraSource(ctx context.Context, hub hfhub.Config, source string) (string, error) {
	src, err := parseLoraSource(source)
	if err != nil {
		return "", err
	}
	if src.hubID != "" {
		if src.revision != "" {
			hub.Revision = src.revision
		}
		hub.Progress = nil
		dir, err := hfhub.ResolveAdapter(ctx, hub, src.hubID)
		if err != nil {
			return "", fmt.Errorf("%w: LoRA source %s: %w", backend.ErrInvalidArgument, source, err)
		}
		return dir, nil
	}
	st, err := os.Stat(src.dir)
	switch {
	case err != nil:
		return "", fmt.Errorf("%w: LoRA source %s: %w", backend.ErrInvalidArgument, source, err)
	case !st.IsDir():
		return "", fmt.Errorf("%w: LoRA source %s: %s is not a directory", backend.ErrInvalidArgument, source, src.dir)
	}
	return src.dir, nil
}
