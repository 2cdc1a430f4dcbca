package bridge

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// llama-server loads LoRA adapters only at its start (--lora FILE,
// --lora-scaled FILE:SCALE) and lists them at GET /lora-adapters, each
// with its id (its place in that list), path and global scale. A
// completion request's "lora" field, [{"id","scale"}], sets the scale of
// each adapter it lists and 0 for the others; without the field (or
// with an empty one) the request gets the global scales, which are the
// start's (1, or --lora-scaled's) whatever --lora-init-without-apply
// says, until POST /lora-adapters changes them. So the bridge sends the
// field with every adapter's scale on every request of an engine that
// has adapters: the adapter's for a request naming one, 0 for all
// otherwise, and a base request is the base model's however the server
// was started.

// llamaAdapter is one entry of GET /lora-adapters.
type llamaAdapter struct {
	ID    int     `json:"id"`
	Path  string  `json:"path"`
	Scale float64 `json:"scale"`
}

// llamaLoraScale is one entry of a completion request's "lora".
type llamaLoraScale struct {
	ID    int     `json:"id"`
	Scale float64 `json:"scale"`
}

// llamaLoras are a llama.cpp engine's adapters and the names LoadLora
// gave them. A value in engineInfo is never changed: LoadLora and
// UnloadLora replace it.
type llamaLoras struct {
	adapters []llamaAdapter          // the server's, as last listed
	names    map[string]llamaLoraUse // adapter name -> the adapter used
}

// llamaLoraUse is the adapter a name selects, and its scale.
type llamaLoraUse struct {
	id    int
	scale float64
}

// llamaListLoras reads GET /lora-adapters.
func llamaListLoras(ctx context.Context, e *Engine) ([]llamaAdapter, error) {
	var list []llamaAdapter
	if err := e.getJSON(ctx, "/lora-adapters", &list); err != nil {
		return nil, err
	}
	return list, nil
}

// llamaStartLoras is Start's view of the server's adapters: none when
// it does not list them (a llama-server without the endpoint).
func llamaStartLoras(ctx context.Context, e *Engine) *llamaLoras {
	list, err := llamaListLoras(ctx, e)
	if err != nil {
		e.log.Debug("bridge: llama-server lists no LoRA adapters", "url", e.base, "err", err)
		return nil
	}
	if len(list) > 0 {
		e.log.Info("bridge: llama-server has LoRA adapters; requests for the base model set their scales to 0", "url", e.base, "adapters", len(list))
	}
	return &llamaLoras{adapters: list}
}

func (llamacpp) loadLora(ctx context.Context, e *Engine, name, path string) error {
	list, err := llamaListLoras(ctx, e)
	if routeMissing(err) {
		return loraUnavailable("the llamacpp engine at %s has no GET /lora-adapters (%s): use a llama-server with LoRA support, started with --lora %s", e.base, answered(err), path)
	}
	if err != nil {
		return err
	}
	a, err := llamaMatchAdapter(list, path)
	if err != nil {
		return err
	}
	use := llamaLoraUse{id: a.ID, scale: a.Scale}
	if use.scale <= 0 {
		use.scale = 1 // started with --lora-init-without-apply, or set to 0 since
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	next := &llamaLoras{adapters: list, names: map[string]llamaLoraUse{}}
	if cur := e.info.llama; cur != nil {
		maps.Copy(next.names, cur.names)
	}
	next.names[name] = use
	e.info.llama = next
	return nil
}

func (llamacpp) unloadLora(_ context.Context, e *Engine, name string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	cur := e.info.llama
	if cur == nil {
		return loraNotLoaded("the llamacpp engine at %s has no adapter named %q", e.base, name)
	}
	if _, ok := cur.names[name]; !ok {
		return loraNotLoaded("the llamacpp engine at %s has no adapter named %q", e.base, name)
	}
	next := &llamaLoras{adapters: cur.adapters, names: maps.Clone(cur.names)}
	delete(next.names, name)
	e.info.llama = next
	return nil
}

// llamaMatchAdapter finds the server's adapter loaded from path: the one
// whose path is path (cleaned), else the one whose file name is path's.
// None is ErrLoraUnavailable: llama-server loads adapters only at its
// start.
func llamaMatchAdapter(list []llamaAdapter, path string) (llamaAdapter, error) {
	for _, a := range list {
		if filepath.Clean(a.Path) == filepath.Clean(path) {
			return a, nil
		}
	}
	var same []llamaAdapter
	for _, a := range list {
		if filepath.Base(a.Path) == filepath.Base(path) {
			same = append(same, a)
		}
	}
	switch len(same) {
	case 1:
		return same[0], nil
	case 0:
		has := "none"
		if len(list) > 0 {
			var paths []string
			for _, a := range list {
				paths = append(paths, strconv.Quote(a.Path))
			}
			has = strings.Join(paths, ", ")
		}
		return llamaAdapter{}, loraUnavailable("llama-server loads LoRA adapters only at its start, and was not started with %s (it has %s): start it with --lora %s", path, has, path)
	}
	return llamaAdapter{}, fmt.Errorf("bridge: %w: llama-server has %d adapters named %s: give the full path the server was started with", backend.ErrInvalidArgument, len(same), filepath.Base(path))
}

// llamaLoraField is a request's "lora": every adapter the server has at
// scale 0, but the one the request names (Routing.LoraName) at its scale;
// nil when the server has none. A name LoadLora did not load is refused.
func llamaLoraField(req *backend.Request, l *llamaLoras) ([]llamaLoraScale, error) {
	name := ""
	if r := req.Routing; r != nil && r.LoraName != nil {
		name = *r.LoraName
	}
	var use llamaLoraUse
	if name != "" {
		ok := false
		if l != nil {
			use, ok = l.names[name]
		}
		if !ok {
			return nil, loraNotLoaded("the llamacpp engine has no adapter named %q (load it first; llama-server must have been started with --lora <its file>)", name)
		}
	}
	if l == nil || len(l.adapters) == 0 {
		return nil, nil
	}
	field := make([]llamaLoraScale, len(l.adapters))
	for i, a := range l.adapters {
		field[i] = llamaLoraScale{ID: a.ID}
		if name != "" && a.ID == use.id {
			field[i].Scale = use.scale
		}
	}
	return field, nil
}
