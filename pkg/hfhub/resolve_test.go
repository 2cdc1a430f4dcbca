package hfhub

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var (
	mainCommit = commitOf("main")
	v2Commit   = commitOf("v2")
)

func testRepos() map[string]*fakeRepo {
	return map[string]*fakeRepo{
		"acme/tiny": {
			commits: map[string]map[string]string{
				mainCommit: {
					"config.json":           `{"max_position_embeddings": 64}`,
					"tokenizer.json":        `{"model": {"type": "WordLevel"}}`,
					"tokenizer_config.json": `{"eos_token": "</s>"}`,
					"model.safetensors":     "WEIGHTS",
					"README.md":             "readme",
				},
				v2Commit: {
					"tokenizer.json":      `{"v": 2}`,
					"chat_template.jinja": "{{ messages }}",
				},
			},
			refs: map[string]string{"main": mainCommit, "v2": v2Commit},
		},
		"acme/private": {
			private: true,
			commits: map[string]map[string]string{mainCommit: {"tokenizer.json": `{}`}},
			refs:    map[string]string{"main": mainCommit},
		},
		"acme/notokenizer": {
			commits: map[string]map[string]string{mainCommit: {"tokenizer.model": "sp"}},
			refs:    map[string]string{"main": mainCommit},
		},
	}
}

func testConfig(t *testing.T, h *fakeHub) Config {
	return Config{Home: t.TempDir(), Endpoint: h.srv.URL, HTTPClient: h.srv.Client()}
}

func TestResolveDownloadsIntoCacheLayout(t *testing.T) {
	for _, lfs := range []bool{false, true} {
		name := "direct"
		if lfs {
			name = "lfs redirect"
		}
		t.Run(name, func(t *testing.T) {
			h := newFakeHub(t, "", testRepos())
			h.lfs = lfs
			cfg := testConfig(t, h)
			var progress bytes.Buffer
			cfg.Progress = &progress
			dir, err := Resolve(t.Context(), cfg, "acme/tiny")
			if err != nil {
				t.Fatal(err)
			}
			repoDir := filepath.Join(cfg.Home, "hub", "models--acme--tiny")
			if want := filepath.Join(repoDir, "snapshots", mainCommit); dir != want {
				t.Fatalf("dir = %s, want %s", dir, want)
			}
			ref, err := os.ReadFile(filepath.Join(repoDir, "refs", "main"))
			if err != nil || string(ref) != mainCommit {
				t.Errorf("refs/main = %q, %v; want %s", ref, err, mainCommit)
			}
			files := testRepos()["acme/tiny"].commits[mainCommit]
			for _, f := range []string{"config.json", "tokenizer.json", "tokenizer_config.json"} {
				p := filepath.Join(dir, f)
				target, err := os.Readlink(p)
				if err != nil {
					t.Fatalf("%s is not a symlink: %v", f, err)
				}
				if want := filepath.Join("..", "..", "blobs", commitOf(files[f])); target != want {
					t.Errorf("%s -> %s, want %s", f, target, want)
				}
				got, err := os.ReadFile(p)
				if err != nil || string(got) != files[f] {
					t.Errorf("%s = %q, %v", f, got, err)
				}
			}
			for _, f := range []string{"model.safetensors", "README.md"} {
				if _, err := os.Lstat(filepath.Join(dir, f)); err == nil {
					t.Errorf("%s downloaded; only the files a worker needs should be", f)
				}
			}
			for _, f := range []string{"generation_config.json", "chat_template.jinja", "special_tokens_map.json"} {
				if _, err := os.Stat(filepath.Join(repoDir, ".no_exist", mainCommit, f)); err != nil {
					t.Errorf("no .no_exist marker for %s: %v", f, err)
				}
			}
			leftovers, _ := filepath.Glob(filepath.Join(repoDir, "blobs", ".tmp-*"))
			if len(leftovers) != 0 {
				t.Errorf("temporary files left: %v", leftovers)
			}
			if got := strings.Count(progress.String(), "\n"); got != 3 || !strings.Contains(progress.String(), "tokenizer.json") {
				t.Errorf("progress:\n%s", progress.String())
			}

			before := h.requests.Load()
			again, err := Resolve(t.Context(), cfg, "acme/tiny")
			if err != nil || again != dir {
				t.Fatalf("second Resolve = %s, %v", again, err)
			}
			if n := h.requests.Load() - before; n != 0 {
				t.Errorf("second Resolve made %d requests, want 0", n)
			}
		})
	}
}

func TestResolveOffline(t *testing.T) {
	h := newFakeHub(t, "", testRepos())
	cfg := testConfig(t, h)
	cfg.Offline = true
	if _, err := Resolve(t.Context(), cfg, "acme/tiny"); !errors.Is(err, ErrNotCached) || !strings.Contains(err.Error(), "HF_HUB_OFFLINE") {
		t.Fatalf("offline, empty cache: err = %v, want ErrNotCached mentioning HF_HUB_OFFLINE", err)
	}
	if n := h.requests.Load(); n != 0 {
		t.Fatalf("offline made %d requests", n)
	}
	cfg.Offline = false
	dir, err := Resolve(t.Context(), cfg, "acme/tiny")
	if err != nil {
		t.Fatal(err)
	}
	h.srv.Close() // no hub at all now
	cfg.Offline = true
	got, err := Resolve(t.Context(), cfg, "acme/tiny")
	if err != nil || got != dir {
		t.Fatalf("offline from cache = %s, %v; want %s", got, err, dir)
	}
	cfg.Revision = "v2"
	if _, err := Resolve(t.Context(), cfg, "acme/tiny"); !errors.Is(err, ErrNotCached) {
		t.Fatalf("offline, other revision: err = %v, want ErrNotCached", err)
	}
	// A pinned commit that is cached resolves without a ref.
	cfg.Revision = mainCommit
	if got, err := Resolve(t.Context(), cfg, "acme/tiny"); err != nil || got != dir {
		t.Fatalf("offline by commit = %s, %v", got, err)
	}
}

func TestResolveOtherRevision(t *testing.T) {
	h := newFakeHub(t, "", testRepos())
	cfg := testConfig(t, h)
	cfg.Revision = "v2"
	dir, err := Resolve(t.Context(), cfg, "acme/tiny")
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(dir) != v2Commit {
		t.Errorf("dir = %s, want the v2 commit", dir)
	}
	b, err := os.ReadFile(filepath.Join(dir, "chat_template.jinja"))
	if err != nil || string(b) != "{{ messages }}" {
		t.Errorf("chat_template.jinja = %q, %v", b, err)
	}
	ref, _ := os.ReadFile(filepath.Join(cfg.Home, "hub", "models--acme--tiny", "refs", "v2"))
	if string(ref) != v2Commit {
		t.Errorf("refs/v2 = %q", ref)
	}
	if _, err := os.Stat(filepath.Join(cfg.Home, "hub", "models--acme--tiny", "refs", "main")); err == nil {
		t.Error("refs/main written for a v2 resolve")
	}
}

func TestResolveToken(t *testing.T) {
	h := newFakeHub(t, "hf_secret", testRepos())
	cfg := testConfig(t, h)
	_, err := Resolve(t.Context(), cfg, "acme/private")
	if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "HF_TOKEN") {
		t.Fatalf("no token: err = %v, want ErrUnauthorized mentioning HF_TOKEN", err)
	}
	cfg.Token = "wrong"
	if _, err := Resolve(t.Context(), cfg, "acme/private"); !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "HF_TOKEN") {
		t.Fatalf("wrong token: err = %v", err)
	}
	cfg.Token = "hf_secret"
	if _, err := Resolve(t.Context(), cfg, "acme/private"); err != nil {
		t.Fatalf("with token: %v", err)
	}
	// A token saved by huggingface-cli login in {Home}/token is used too.
	cfg2 := testConfig(t, h)
	os.WriteFile(filepath.Join(cfg2.Home, "token"), []byte("hf_secret\n"), 0o600)
	if _, err := Resolve(t.Context(), cfg2, "acme/private"); err != nil {
		t.Fatalf("with saved token: %v", err)
	}
}

func TestResolveNotFound(t *testing.T) {
	h := newFakeHub(t, "", testRepos())
	cfg := testConfig(t, h)
	for _, tc := range []struct {
		model, revision, want string
	}{
		{"acme/missing", "", "not found"},
		{"acme/tiny", "nope", "revision not found"},
		{"acme/notokenizer", "", "tokenizer.json"},
	} {
		cfg.Revision = tc.revision
		_, err := Resolve(t.Context(), cfg, tc.model)
		if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Resolve(%s@%s) = %v, want ErrNotFound mentioning %q", tc.model, tc.revision, err, tc.want)
		}
	}
	// A bare 404 (no X-Error-Code) reads as "not found" too.
	plain := newFakeHub(t, "", nil)
	cfg = testConfig(t, plain)
	cfg.Endpoint += "/elsewhere"
	if _, err := Resolve(t.Context(), cfg, "acme/tiny"); !errors.Is(err, ErrNotFound) {
		t.Errorf("404: err = %v, want ErrNotFound", err)
	}
}

func TestResolveLocalDirectory(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Home: t.TempDir(), Endpoint: "http://127.0.0.1:1", Offline: true}
	if got, err := Resolve(t.Context(), cfg, dir); err != nil || got != dir {
		t.Fatalf("Resolve(local) = %s, %v", got, err)
	}
	file := filepath.Join(dir, "f")
	os.WriteFile(file, nil, 0o644)
	for _, p := range []string{file, "no/such/dir/here", "../x/y", "not-a-hub-id", ""} {
		if _, err := Resolve(t.Context(), cfg, p); !errors.Is(err, ErrInvalidPath) {
			t.Errorf("Resolve(%q) = %v, want ErrInvalidPath", p, err)
		}
	}
}

func TestConfigFromEnv(t *testing.T) {
	env := map[string]string{
		"XDG_CACHE_HOME": "/xdg", "HF_HUB_CACHE": "/cache", "HF_ENDPOINT": "http://mirror",
		"HUGGING_FACE_HUB_TOKEN": "old", "HF_HUB_OFFLINE": "1",
	}
	cfg := ConfigFromEnv(func(k string) string { return env[k] })
	want := Config{Home: "/xdg/huggingface", HubCache: "/cache", Endpoint: "http://mirror", Token: "old", Offline: true}
	if cfg != want {
		t.Errorf("ConfigFromEnv = %+v, want %+v", cfg, want)
	}
	env = map[string]string{"HF_HOME": "/h", "HF_TOKEN": "new", "HUGGING_FACE_HUB_TOKEN": "old", "HF_HUB_OFFLINE": "0"}
	cfg = ConfigFromEnv(func(k string) string { return env[k] })
	if cfg.Home != "/h" || cfg.Token != "new" || cfg.Offline {
		t.Errorf("ConfigFromEnv = %+v", cfg)
	}
}

// A missing path that looks local is reported as a missing directory,
// naming it and why it was taken for local, without asking the hub (its
// endpoint here refuses connections, and Offline is off).
func TestResolveMistypedLocalPathNeverGoesToTheHub(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.Mkdir("models", 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Home: t.TempDir(), Endpoint: "http://127.0.0.1:1"}
	for _, tc := range []struct{ path, why string }{
		{"models/dmeo", "because its parent directory models exists"},
		{"./models/dmeo", "because it has a path separator and is not of the form org/name"},
		{"a/b/c", "because it has a path separator and is not of the form org/name"},
	} {
		_, err := Resolve(t.Context(), cfg, tc.path)
		if !errors.Is(err, ErrInvalidPath) || !strings.Contains(err.Error(), "model directory "+tc.path+" does not exist") ||
			!strings.Contains(err.Error(), "taken for a local path") || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("Resolve(%q) = %v; want ErrInvalidPath naming the missing directory and %q", tc.path, err, tc.why)
		}
	}
	// A hub id whose org is no local directory still goes to the hub
	// (here: the refused endpoint).
	if _, err := Resolve(t.Context(), cfg, "acme/tiny"); err == nil || errors.Is(err, ErrInvalidPath) {
		t.Errorf("Resolve(acme/tiny) = %v; want the hub's failure, not ErrInvalidPath", err)
	}
}
