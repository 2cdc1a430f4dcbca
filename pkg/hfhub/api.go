package hfhub

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// repoInfo is the part of GET /api/models/{id}/revision/{revision} used here.
type repoInfo struct {
	SHA      string `json:"sha"`
	Siblings []struct {
		RFilename string `json:"rfilename"`
	} `json:"siblings"`
}

// client talks to the hub API.
type client struct {
	cfg Config
}

func (c client) get(ctx context.Context, rawURL string, hdr *fileHeaders) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, fmt.Errorf("hfhub: %w", err)
	}
	req.Header.Set("User-Agent", "dynamo-go/hfhub")
	if c.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	}
	hc := *c.cfg.HTTPClient
	next := hc.CheckRedirect
	hc.CheckRedirect = func(r *http.Request, via []*http.Request) error {
		// The hub answers a large (LFS) file with a redirect to a CDN; its
		// first response carries the repo's ETag and commit.
		if hdr != nil && len(via) == 1 && r.Response != nil {
			hdr.take(r.Response.Header)
		}
		if next != nil {
			return next(r, via)
		}
		if len(via) >= 10 {
			return fmt.Errorf("stopped after 10 redirects")
		}
		return nil
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("hfhub: GET %s: %w", rawURL, err)
	}
	return resp, nil
}

// info resolves a revision to a commit and the repo's file list.
func (c client) info(ctx context.Context, id, revision string) (*repoInfo, error) {
	u := c.cfg.Endpoint + "/api/models/" + id + "/revision/" + url.PathEscape(revision)
	resp, err := c.get(ctx, u, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if err := c.check(resp, id, revision, ""); err != nil {
		return nil, err
	}
	var info repoInfo
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&info); err != nil {
		return nil, fmt.Errorf("hfhub: %s revision %s: bad API response: %w", id, revision, err)
	}
	if !commitPattern.MatchString(info.SHA) {
		return nil, fmt.Errorf("hfhub: %s revision %s: API returned commit %q, want 40 hex digits", id, revision, info.SHA)
	}
	return &info, nil
}

// fileHeaders are the response headers that name a downloaded file.
type fileHeaders struct {
	etag, commit string
}

// take keeps the first ETag seen (X-Linked-Etag for LFS files) and commit.
func (h *fileHeaders) take(hd http.Header) {
	if h.etag == "" {
		e := hd.Get("X-Linked-Etag")
		if e == "" {
			e = hd.Get("ETag")
		}
		h.etag = normalizeETag(e)
	}
	if h.commit == "" {
		h.commit = hd.Get("X-Repo-Commit")
	}
}

// normalizeETag strips the weak prefix and quotes; it returns "" for a
// value unusable as a file name.
func normalizeETag(e string) string {
	e = strings.Trim(strings.TrimPrefix(strings.TrimSpace(e), "W/"), `"`)
	for _, r := range e {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return ""
		}
	}
	return e
}

// download GETs one file of a commit. The caller closes the body.
func (c client) download(ctx context.Context, id, commit, file string) (*http.Response, fileHeaders, error) {
	var hdr fileHeaders
	u := c.cfg.Endpoint + "/" + id + "/resolve/" + commit + "/" + url.PathEscape(file)
	resp, err := c.get(ctx, u, &hdr)
	if err != nil {
		return nil, hdr, err
	}
	if err := c.check(resp, id, commit, file); err != nil {
		resp.Body.Close()
		return nil, hdr, err
	}
	hdr.take(resp.Header)
	return resp, hdr, nil
}

// check turns a non-200 response into an error that says what to do.
func (c client) check(resp *http.Response, id, revision, file string) error {
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	what := fmt.Sprintf("model %s revision %s", id, revision)
	if file != "" {
		what = fmt.Sprintf("file %s of model %s at %s", file, id, revision)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	detail := strings.TrimSpace(string(body))
	code := resp.Header.Get("X-Error-Code")
	tokenHint := "set HF_TOKEN to a Hugging Face access token that can read it"
	if c.cfg.Token != "" {
		tokenHint = "the HF_TOKEN sent was rejected or cannot read it"
	}
	switch {
	case code == "RepositoryNotFound":
		return fmt.Errorf("%w: %s on %s: repository not found (if it is private or gated, %s)", ErrNotFound, what, c.cfg.Endpoint, tokenHint)
	case code == "RevisionNotFound":
		return fmt.Errorf("%w: %s on %s: revision not found", ErrNotFound, what, c.cfg.Endpoint)
	case code == "GatedRepo" || resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("%w: %s on %s: HTTP %d (private or gated model: %s; for gated models also accept the licence on the model page): %s",
			ErrUnauthorized, what, c.cfg.Endpoint, resp.StatusCode, tokenHint, detail)
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%w: %s on %s: model or revision not found (HTTP 404)", ErrNotFound, what, c.cfg.Endpoint)
	}
	return fmt.Errorf("hfhub: %s on %s: HTTP %d: %s", what, c.cfg.Endpoint, resp.StatusCode, detail)
}
