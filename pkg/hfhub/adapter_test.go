package hfhub

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func adapterRepos() map[string]*fakeRepo {
	repos := testRepos()
	repos["acme/sql-lora"] = &fakeRepo{
		commits: map[string]map[string]string{
			mainCommit: {"adapter_config.json": `{"r": 8}`, "adapter_model.safetensors": "LORA", "README.md": "readme"},
			v2Commit:   {"adapter_config.json": `{"r": 16}`, "adapter_model.bin": "LORA2"},
		},
		refs: map[string]string{"main": mainCommit, "v2": v2Commit},
	}
	repos["acme/noweights"] = &fakeRepo{
		commits: map[string]map[string]string{mainCommit: {"adapter_config.json": `{}`}},
		refs:    map[string]string{"main": mainCommit},
	}
	return repos
}

// An adapter repository is downloaded with its configuration and weights
// (not a model's files), then served from the cache without the hub.
func TestResolveAdapterDownloadsThenUsesTheCache(t *testing.T) {
	h := newFakeHub(t, "", adapterRepos())
	cfg := testConfig(t, h)
	dir, err := ResolveAdapter(t.Context(), cfg, "acme/sql-lora")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(cfg.Home, "hub", "models--acme--sql-lora", "snapshots", mainCommit); dir != want {
		t.Fatalf("dir = %s, want %s", dir, want)
	}
	for file, want := range map[string]string{"adapter_config.json": `{"r": 8}`, "adapter_model.safetensors": "LORA"} {
		if b, err := os.ReadFile(filepath.Join(dir, file)); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", file, b, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "README.md")); err == nil {
		t.Error("README.md downloaded; only the adapter's files should be")
	}
	before := h.requests.Load()
	if again, err := ResolveAdapter(t.Context(), cfg, "acme/sql-lora"); err != nil || again != dir {
		t.Fatalf("second resolve = %s, %v", again, err)
	}
	if n := h.requests.Load() - before; n != 0 {
		t.Fatalf("a cached adapter cost %d hub requests", n)
	}

	cfg.Revision = "v2"
	dir2, err := ResolveAdapter(t.Context(), cfg, "acme/sql-lora")
	if err != nil || filepath.Base(dir2) != v2Commit {
		t.Fatalf("v2 = %s, %v", dir2, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir2, "adapter_model.bin")); err != nil || string(b) != "LORA2" {
		t.Errorf("v2 adapter_model.bin = %q, %v", b, err)
	}
}

func TestResolveAdapterRefusesWhatIsNotAnAdapter(t *testing.T) {
	h := newFakeHub(t, "", adapterRepos())
	cfg := testConfig(t, h)
	for id, want := range map[string]string{
		"acme/noweights": "adapter_model.safetensors or adapter_model.bin",
		"acme/tiny":      "adapter_config.json",
	} {
		_, err := ResolveAdapter(t.Context(), cfg, id)
		if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "LoRA adapter") {
			t.Errorf("%s: err = %v, want ErrNotFound naming %s", id, err, want)
		}
	}
	if _, err := ResolveAdapter(t.Context(), cfg, "../etc"); !errors.Is(err, ErrInvalidPath) {
		t.Errorf("a bad id: err = %v, want ErrInvalidPath", err)
	}
}
