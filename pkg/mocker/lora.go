package mocker

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/kvblock"
)

var _ backend.LoraEngine = (*Engine)(nil)

// LoraConfigFile is the file a LoRA adapter's directory must hold for the
// engine to load it, as a real engine's loader requires (PEFT's adapter
// configuration).
const LoraConfigFile = "adapter_config.json"

// LoadLora simulates loading adapter name from the directory path: it
// checks that path is a directory holding LoraConfigFile (refusing it
// otherwise, as an engine refuses a bad adapter), sleeps
// Config.LoraLoadTime divided by SpeedupRatio (returning early with ctx's
// cause, or backend.ErrEngineShutdown after Cleanup), and from then on
// serves requests whose Routing.LoraName is name. Loading a name already
// loaded is an error; the adapter occupies no KV blocks or sequence slots.
func (e *Engine) LoadLora(ctx context.Context, name, path string) error {
	if name == "" {
		return fmt.Errorf("mocker: %w: a LoRA adapter needs a name", backend.ErrInvalidArgument)
	}
	if _, err := os.Stat(filepath.Join(path, LoraConfigFile)); err != nil {
		return fmt.Errorf("mocker: %w: LoRA adapter %q: %s is not an adapter directory (no %s)", backend.ErrInvalidArgument, name, path, LoraConfigFile)
	}
	e.mu.Lock()
	if _, ok := e.loras[name]; ok {
		e.mu.Unlock()
		return fmt.Errorf("mocker: %w: LoRA adapter %q is already loaded", backend.ErrInvalidArgument, name)
	}
	if e.loading[name] {
		e.mu.Unlock()
		return fmt.Errorf("mocker: %w: LoRA adapter %q is being loaded", backend.ErrInvalidArgument, name)
	}
	e.loading[name] = true
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.loading, name)
		e.mu.Unlock()
	}()

	if d := scale(e.cfg.LoraLoadTime, e.cfg.SpeedupRatio); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("mocker: load LoRA adapter %q: %w", name, context.Cause(ctx))
		case <-e.done:
			t.Stop()
			return fmt.Errorf("mocker: load LoRA adapter %q: %w", name, backend.ErrEngineShutdown)
		}
	}
	e.mu.Lock()
	e.loras[name] = path
	e.mu.Unlock()
	e.cfg.Logger.Debug("mocker: LoRA adapter loaded", "lora_name", name, "path", path)
	return nil
}

// UnloadLora forgets adapter name: requests for it are refused from now
// on. Unloading a name not loaded is an error.
func (e *Engine) UnloadLora(_ context.Context, name string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.loras[name]; !ok {
		return fmt.Errorf("mocker: %w: LoRA adapter %q is not loaded", backend.ErrInvalidArgument, name)
	}
	delete(e.loras, name)
	return nil
}

// Loras returns the names of the adapters loaded now, sorted.
func (e *Engine) Loras() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Sorted(maps.Keys(e.loras))
}

// loraName is the adapter a request asks for; "" for the base model.
func loraName(req *backend.Request) string {
	if req.Routing == nil || req.Routing.LoraName == nil {
		return ""
	}
	return *req.Routing.LoraName
}

// checkLora refuses a request for an adapter that is not loaded.
func (e *Engine) checkLora(req *backend.Request) error {
	name := loraName(req)
	if name == "" {
		return nil
	}
	e.mu.Lock()
	_, ok := e.loras[name]
	e.mu.Unlock()
	if !ok {
		return fmt.Errorf("mocker: %w: LoRA adapter %q is not loaded", backend.ErrInvalidArgument, name)
	}
	return nil
}

// LoraSeed is the sampling seed a request for adapter lora draws its
// tokens with, for a request seed seed: seed itself for the base model
// (lora ""), else seed mixed with a hash of the adapter's name, so that
// each adapter answers differently from the base model and from every
// other adapter, deterministically.
func LoraSeed(seed int64, lora string) int64 {
	if lora == "" {
		return seed
	}
	return seed ^ int64(splitmix64(xxh3.HashString(lora)))
}

// LoraHashSeed is the block-hash seed of a request for adapter lora:
// kvblock.SaltedSeed(lora, ""), which is kvblock.Seed for the base model.
// Blocks of two adapters, or of an adapter and the base model, never
// share a hash, in the cache or in the KV events (tokens_hash and
// block_hash); routers hash an adapter's prompt the same way.
func LoraHashSeed(lora string) uint64 { return kvblock.SaltedSeed(lora, "") }
