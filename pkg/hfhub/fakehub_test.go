package hfhub

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeRepo is one model repository of the fake hub.
type fakeRepo struct {
	private bool                         // requires the token
	commits map[string]map[string]string // commit -> file -> contents
	refs    map[string]string            // branch -> commit
}

// fakeHub serves the two hub endpoints Resolve uses from memory, and counts
// requests.
type fakeHub struct {
	t        *testing.T
	token    string
	repos    map[string]*fakeRepo
	requests atomic.Int64
	srv      *httptest.Server
	// lfs serves file contents through a redirect to /cdn/, as the hub does
	// for large files.
	lfs bool
}

func newFakeHub(t *testing.T, token string, repos map[string]*fakeRepo) *fakeHub {
	h := &fakeHub{t: t, token: token, repos: repos}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	return h
}

func commitOf(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

func (h *fakeHub) serve(w http.ResponseWriter, r *http.Request) {
	h.requests.Add(1)
	path := r.URL.EscapedPath()
	if rest, ok := strings.CutPrefix(path, "/cdn/"); ok {
		// A CDN: the URL is the capability (the real one is signed).
		// {org}/{name}/{commit}/{file}
		p := strings.SplitN(rest, "/", 4)
		w.Header().Set("ETag", `"cdn-etag"`)
		w.Write([]byte(h.repos[p[0]+"/"+p[1]].commits[p[2]][p[3]]))
		return
	}
	var id, rev, file string
	api := strings.HasPrefix(path, "/api/models/")
	if api {
		rest := strings.TrimPrefix(path, "/api/models/")
		parts := strings.SplitN(rest, "/revision/", 2)
		if len(parts) != 2 {
			http.NotFound(w, r)
			return
		}
		id, rev = parts[0], parts[1]
	} else {
		parts := strings.SplitN(strings.TrimPrefix(path, "/"), "/resolve/", 2)
		if len(parts) != 2 {
			http.NotFound(w, r)
			return
		}
		id = parts[0]
		rev, file, _ = strings.Cut(parts[1], "/")
	}
	repo := h.repos[id]
	authorized := r.Header.Get("Authorization") == "Bearer "+h.token
	if repo == nil || repo.private && !authorized {
		// The real hub hides private repos behind 401 RepositoryNotFound.
		if repo == nil {
			w.Header().Set("X-Error-Code", "RepositoryNotFound")
		}
		http.Error(w, `{"error":"Repository not found"}`, http.StatusUnauthorized)
		return
	}
	commit := rev
	if c, ok := repo.refs[rev]; ok {
		commit = c
	}
	files, ok := repo.commits[commit]
	if !ok {
		w.Header().Set("X-Error-Code", "RevisionNotFound")
		http.Error(w, `{"error":"Invalid rev id"}`, http.StatusNotFound)
		return
	}
	if api {
		var info struct {
			SHA      string              `json:"sha"`
			Siblings []map[string]string `json:"siblings"`
		}
		info.SHA = commit
		for name := range files {
			info.Siblings = append(info.Siblings, map[string]string{"rfilename": name})
		}
		json.NewEncoder(w).Encode(info)
		return
	}
	contents, ok := files[file]
	if !ok {
		w.Header().Set("X-Error-Code", "EntryNotFound")
		http.Error(w, "Entry not found", http.StatusNotFound)
		return
	}
	etag := commitOf(contents) // a git blob id stands in for the ETag
	w.Header().Set("X-Repo-Commit", commit)
	if h.lfs {
		w.Header().Set("X-Linked-Etag", `"`+etag+`"`)
		w.Header().Set("ETag", `"redirect-etag"`)
		http.Redirect(w, r, "/cdn/"+id+"/"+commit+"/"+file, http.StatusFound)
		return
	}
	w.Header().Set("ETag", `"`+etag+`"`)
	w.Write([]byte(contents))
}
