package hfhub

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// Defaults.
const (
	DefaultEndpoint = "https://huggingface.co"
	DefaultRevision = "main"
)

// Config says where the cache is and how to reach the hub. The zero value
// uses ~/.cache/huggingface, https://huggingface.co and revision main.
type Config struct {
	// Home is HF_HOME; "" means ~/.cache/huggingface. A token saved by
	// `huggingface-cli login` in {Home}/token is used when Token is "".
	Home string
	// HubCache is HF_HUB_CACHE; "" means {Home}/hub.
	HubCache string
	// Endpoint is HF_ENDPOINT; "" means DefaultEndpoint.
	Endpoint string
	// Token is HF_TOKEN, sent as "Authorization: Bearer {Token}"; "" sends
	// none (unless {Home}/token exists).
	Token string
	// Revision is the branch, tag or commit to use; "" means "main".
	Revision string
	// Offline is HF_HUB_OFFLINE: resolve from the cache only.
	Offline bool
	// Progress receives one line per file; nil means none.
	Progress io.Writer
	// HTTPClient makes the hub requests; nil means a default client.
	// Requests are bounded by the context passed to Resolve.
	HTTPClient *http.Client
	// Logger gets debug logs; nil discards them.
	Logger *slog.Logger
}

// ConfigFromEnv maps the Hugging Face environment variables, read through
// lookup (os.Getenv in main), into a Config: HF_HOME (default
// $XDG_CACHE_HOME/huggingface when XDG_CACHE_HOME is set), HF_HUB_CACHE
// (or the older HUGGINGFACE_HUB_CACHE), HF_ENDPOINT, HF_TOKEN (or the older
// HUGGING_FACE_HUB_TOKEN), HF_HUB_OFFLINE ("1", "true", "yes", "on").
func ConfigFromEnv(lookup func(string) string) Config {
	first := func(keys ...string) string {
		for _, k := range keys {
			if v := lookup(k); v != "" {
				return v
			}
		}
		return ""
	}
	cfg := Config{
		Home:     lookup("HF_HOME"),
		HubCache: first("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"),
		Endpoint: lookup("HF_ENDPOINT"),
		Token:    first("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"),
	}
	if cfg.Home == "" {
		if xdg := lookup("XDG_CACHE_HOME"); xdg != "" {
			cfg.Home = filepath.Join(xdg, "huggingface")
		}
	}
	switch strings.ToLower(strings.TrimSpace(lookup("HF_HUB_OFFLINE"))) {
	case "1", "true", "yes", "on":
		cfg.Offline = true
	}
	return cfg
}

// withDefaults fills the zero fields.
func (c Config) withDefaults() (Config, error) {
	if c.Home == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return c, fmt.Errorf("hfhub: no HF_HOME and no home directory: %w", err)
		}
		c.Home = filepath.Join(home, ".cache", "huggingface")
	}
	if c.HubCache == "" {
		c.HubCache = filepath.Join(c.Home, "hub")
	}
	if c.Endpoint == "" {
		c.Endpoint = DefaultEndpoint
	}
	c.Endpoint = strings.TrimRight(c.Endpoint, "/")
	if c.Revision == "" {
		c.Revision = DefaultRevision
	}
	if c.Token == "" {
		if b, err := os.ReadFile(filepath.Join(c.Home, "token")); err == nil {
			c.Token = strings.TrimSpace(string(b))
		}
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	return c, nil
}
