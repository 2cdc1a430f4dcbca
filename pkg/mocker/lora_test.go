package mocker

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/kvblock"
)

// adapterDir makes a directory a LoRA adapter can be loaded from.
func adapterDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, LoraConfigFile), []byte(`{"r": 8}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func forLora(r *backend.Request, lora string) *backend.Request {
	if lora != "" {
		r.Routing = &backend.Routing{LoraName: backend.Ptr(lora)}
	}
	return r
}

// generateTokens runs one request and returns its tokens and its cached
// prompt tokens.
func generateTokens(t *testing.T, e *Engine, req *backend.Request) ([]uint32, int) {
	t.Helper()
	var c collector
	if err := e.Generate(t.Context(), req, c.emit); err != nil {
		t.Fatal(err)
	}
	return c.tokens(), c.terminal(t).CompletionUsage.PromptTokensDetails.CachedTokens
}

// Each adapter answers the same prompt and seed differently, from the
// base model and from each other, always the same way; the base model's
// answer is the one it gives without adapters.
func TestLoraOutputDependsOnTheAdapter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := startEngine(t, func(c *Config) { c.BlockSize = 4 })
		defer stopEngine(t, e)
		dir := adapterDir(t)
		for _, name := range []string{"sql", "law"} {
			if err := e.LoadLora(t.Context(), name, dir); err != nil {
				t.Fatal(err)
			}
		}
		p := prompt(10, 6)
		base, _ := generateTokens(t, e, request(p, 8, 7))
		for i, tok := range base {
			if want := DeterministicToken(7, len(p)+i); tok != want {
				t.Fatalf("base token %d = %d, want the base model's %d", i, tok, want)
			}
		}
		sql, _ := generateTokens(t, e, forLora(request(p, 8, 7), "sql"))
		sql2, _ := generateTokens(t, e, forLora(request(p, 8, 7), "sql"))
		law, _ := generateTokens(t, e, forLora(request(p, 8, 7), "law"))
		if slices.Equal(sql, base) || slices.Equal(law, base) || slices.Equal(sql, law) {
			t.Fatalf("base %v, sql %v, law %v: want three different answers", base, sql, law)
		}
		if !slices.Equal(sql, sql2) {
			t.Fatalf("sql answered %v then %v", sql, sql2)
		}
	})
}

// An adapter's prompt blocks are hashed with the adapter's salt
// (kvblock.SaltedSeed), in the cache and in the KV events: the same
// prompt shares no cached block across adapters or with the base model,
// and is a cache hit for the same adapter.
func TestLoraBlockHashesAreSalted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, pub := startEngine(t, func(c *Config) { c.BlockSize = 4 })
		defer stopEngine(t, e)
		dir := adapterDir(t)
		for _, name := range []string{"sql", "law"} {
			if err := e.LoadLora(t.Context(), name, dir); err != nil {
				t.Fatal(err)
			}
		}
		p := prompt(10, 9) // two full blocks
		stored := func(from int) []kvblock.StoredBlock {
			synctest.Wait()
			events, _, _ := pub.snapshot()
			var out []kvblock.StoredBlock
			for _, ev := range events[from:] {
				if s := ev.Event.Data.Stored; s != nil {
					out = append(out, s.Blocks...)
				}
			}
			return out
		}
		seen := 0
		for _, lora := range []string{"", "sql", "law", "sql"} {
			events, _, _ := pub.snapshot()
			seen = len(events)
			_, cached := generateTokens(t, e, forLora(request(p, 1, 0), lora))
			blocks := stored(seen)
			if lora == "sql" && cached > 0 {
				// The second sql request: a hit on the first one's blocks.
				if cached != 8 || len(blocks) != 0 {
					t.Fatalf("second sql request: %d cached tokens, %d new blocks; want 8 and none", cached, len(blocks))
				}
				continue
			}
			if cached != 0 {
				t.Fatalf("lora %q: %d cached tokens; a first request of an adapter must share no block", lora, cached)
			}
			if len(blocks) < 2 {
				t.Fatalf("lora %q: stored %v, want the prompt's two blocks", lora, blocks)
			}
			local := kvblock.LocalHashesSeed(p, 4, kvblock.SaltedSeed(lora, ""))
			seq := kvblock.SeqHashes(local)
			for i := range 2 {
				if blocks[i].TokensHash != local[i] || blocks[i].BlockHash != seq[i] {
					t.Errorf("lora %q block %d: %+v, want tokens_hash %d block_hash %d", lora, i, blocks[i], local[i], seq[i])
				}
			}
		}
		if LoraHashSeed("") != kvblock.Seed || LoraHashSeed("sql") == LoraHashSeed("law") {
			t.Fatal("the base model's seed must be kvblock.Seed, two adapters' must differ")
		}
	})
}

func TestLoraLoadAndUnload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := startEngine(t, func(c *Config) { c.LoraLoadTime, c.SpeedupRatio = 2*time.Second, 4 })
		defer stopEngine(t, e)
		dir := adapterDir(t)
		start := time.Now()
		if err := e.LoadLora(t.Context(), "sql", dir); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != 500*time.Millisecond {
			t.Fatalf("load took %s, want the load time over the speedup ratio (500ms)", took)
		}
		if err := e.LoadLora(t.Context(), "sql", dir); !errors.Is(err, backend.ErrInvalidArgument) || !strings.Contains(err.Error(), "already loaded") {
			t.Fatalf("second load: %v", err)
		}
		if err := e.LoadLora(t.Context(), "bad", t.TempDir()); !errors.Is(err, backend.ErrInvalidArgument) || !strings.Contains(err.Error(), LoraConfigFile) {
			t.Fatalf("a directory without %s: %v", LoraConfigFile, err)
		}
		if got := e.Loras(); !slices.Equal(got, []string{"sql"}) {
			t.Fatalf("loaded %v, want [sql]", got)
		}
		if err := e.UnloadLora(t.Context(), "sql"); err != nil {
			t.Fatal(err)
		}
		err := e.Generate(t.Context(), forLora(request(prompt(0, 4), 2, 0), "sql"), (&collector{}).emit)
		if !errors.Is(err, backend.ErrInvalidArgument) || !strings.Contains(err.Error(), `"sql" is not loaded`) {
			t.Fatalf("a request for an unloaded adapter: %v", err)
		}
		if err := e.UnloadLora(t.Context(), "sql"); !errors.Is(err, backend.ErrInvalidArgument) {
			t.Fatalf("second unload: %v", err)
		}
	})
}

// A KVBatchPublisher (the vLLM API's event stream) learns the adapter of
// each stored block, whose tokens_hash is salted with it: a subscriber
// hashing the token ids with kvblock.SaltedSeed(lora_name) gets the same
// hashes.
func TestKVBatchesNameTheLoraOfStoredBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := testEngine(t, func(c *Config) { c.BlockSize, c.NumGPUBlocks = 4, 16 })
		pub := &batchPublisher{}
		e.SetEventPublisher(pub)
		if _, err := e.Start(t.Context(), 42); err != nil {
			t.Fatal(err)
		}
		defer stopEngine(t, e)
		if err := e.LoadLora(t.Context(), "sql", adapterDir(t)); err != nil {
			t.Fatal(err)
		}
		for _, lora := range []string{"sql", ""} {
			if err := e.Generate(t.Context(), forLora(request(prompt(0, 6), 2, 0), lora), (&collector{}).emit); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		pub.mu.Lock()
		defer pub.mu.Unlock()
		byLora := map[string]int{}
		for _, b := range pub.batches {
			for _, ev := range b {
				s := ev.Event.Data.Stored
				if s == nil {
					continue
				}
				byLora[ev.LoraName] += len(s.Blocks)
				want := kvblock.LocalHashesSeed(ev.Tokens, 4, kvblock.SaltedSeed(ev.LoraName, ""))
				for i, blk := range s.Blocks {
					if blk.TokensHash != want[i] {
						t.Errorf("lora %q block %d: tokens_hash %d, want %d (its tokens hashed with its adapter's salt)", ev.LoraName, i, blk.TokensHash, want[i])
					}
				}
			}
		}
		if byLora["sql"] != 2 || byLora[""] != 2 {
			t.Fatalf("stored blocks by adapter %v, want 2 of sql's and 2 of the base model's", byLora)
		}
	})
}
