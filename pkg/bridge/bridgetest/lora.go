package bridgetest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
)

// LoRA adapters. With Options.Loras, vLLM's and SGLang's fakes load and
// unload adapters by name (the engines' bodies {"lora_name",
// "lora_path"} and {"lora_name"}, and their answers: vLLM a text, 400
// for a name loaded twice, 404 for an unknown one on unload; SGLang
// {"success", "error_message", "loaded_adapters"}, 400 when it fails);
// llama.cpp's serves Options.LlamaLoras at GET /lora-adapters.
//
// A request selects an adapter as each engine's does: vLLM's model
// names it (404 for a name neither the model nor a loaded adapter),
// SGLang's lora_path (with Options.Loras, 400 for one not loaded),
// llama.cpp's lora field
// [{"id","scale"}] (an adapter not listed gets scale 0; without the
// field every adapter applies at scale 1, as llama-server's global
// scales do). An answer with adapter k applied (vLLM and SGLang: the
// k-th loaded, from 1; llama.cpp: id k-1, the lowest id at a scale
// above 0) has tokens 1000*(k+1)+i instead of 1000+i.

// LoraCall is one load or unload request the fake received.
type LoraCall struct {
	Path string
	Body map[string]any
}

// loraState is the fake's adapters.
type loraState struct {
	calls  []LoraCall
	loaded []string          // names, in load order (k = index+1)
	paths  map[string]string // name -> path
}

// LoraCalls returns the load and unload requests received, in order.
func (s *Server) LoraCalls() []LoraCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]LoraCall(nil), s.loras.calls...)
}

// Loras returns the names of the adapters loaded now (vLLM, SGLang).
func (s *Server) Loras() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.loras.loaded...)
}

// loraModels returns /v1/models' entries of the loaded adapters, as
// vLLM lists them (parent: the model; no max_model_len).
func (s *Server) loraModels() []any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []any
	for _, n := range s.loras.loaded {
		out = append(out, map[string]any{"id": n, "object": "model", "root": s.loras.paths[n], "parent": s.opts.Model, "max_model_len": nil})
	}
	return out
}

func (s *Server) loraRoutes(mux *http.ServeMux) {
	switch {
	case s.dialect == "llamacpp":
		mux.HandleFunc("GET /lora-adapters", func(w http.ResponseWriter, _ *http.Request) {
			list := []any{}
			for i, p := range s.opts.LlamaLoras {
				list = append(list, map[string]any{"id": i, "path": p, "scale": 1.0, "task_name": "", "prompt_prefix": ""})
			}
			writeJSON(w, 200, list)
		})
	case !s.opts.Loras:
	case s.dialect == "vllm":
		mux.HandleFunc("POST /v1/load_lora_adapter", s.loraCall(true))
		mux.HandleFunc("POST /v1/unload_lora_adapter", s.loraCall(false))
	case s.dialect == "sglang":
		mux.HandleFunc("POST /load_lora_adapter", s.loraCall(true))
		mux.HandleFunc("POST /unload_lora_adapter", s.loraCall(false))
	}
}

// loraCall handles a load (or unload) in the dialect's shape.
func (s *Server) loraCall(load bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			writeJSON(w, 400, map[string]any{"error": map[string]any{"message": err.Error(), "code": 400}})
			return
		}
		name, _ := body["lora_name"].(string)
		path, _ := body["lora_path"].(string)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.loras.calls = append(s.loras.calls, LoraCall{Path: r.URL.Path, Body: body})
		if s.loras.paths == nil {
			s.loras.paths = map[string]string{}
		}
		_, has := s.loras.paths[name]
		var status int
		var msg string
		switch {
		case name == "" || load && path == "":
			status, msg = 400, "Both 'lora_name' and 'lora_path' must be provided."
		case load && has:
			status, msg = 400, fmt.Sprintf("The lora adapter '%s' has already been loaded.", name)
		case load && path == s.opts.BadLoraPath:
			status, msg = 400, fmt.Sprintf("Loading lora %s failed: No adapter found for %s", name, path)
		case !load && !has:
			status, msg = 404, fmt.Sprintf("The lora adapter '%s' cannot be found.", name)
		case load:
			s.loras.loaded = append(s.loras.loaded, name)
			s.loras.paths[name] = path
			msg = fmt.Sprintf("Success: LoRA adapter '%s' added successfully.", name)
		default:
			s.loras.loaded = slices.DeleteFunc(s.loras.loaded, func(n string) bool { return n == name })
			delete(s.loras.paths, name)
			msg = fmt.Sprintf("Success: LoRA adapter '%s' removed successfully.", name)
		}
		if s.dialect == "sglang" {
			if status == 404 {
				status = 400 // SGLang answers every failure with 400
			}
			writeJSON(w, max(status, 200), map[string]any{"success": status == 0, "error_message": msg, "loaded_adapters": s.loras.paths})
			return
		}
		if status != 0 {
			typ := map[int]string{400: "BadRequestError", 404: "NotFoundError"}[status]
			writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": status}})
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte(msg))
	}
}

// loraError is a generation request's adapter refused.
type loraError struct {
	status int
	msg    string
}

// adapterOf returns k, the adapter a generation request applies (0:
// none), or the engine's refusal.
func (s *Server) adapterOf(body map[string]any) (int, *loraError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.dialect {
	case "vllm":
		m, _ := body["model"].(string)
		if m == "" || m == s.opts.Model {
			return 0, nil
		}
		if k := slices.Index(s.loras.loaded, m); k >= 0 {
			return k + 1, nil
		}
		return 0, &loraError{404, fmt.Sprintf("The model `%s` does not exist.", m)}
	case "sglang":
		p, _ := body["lora_path"].(string)
		if p == "" || !s.opts.Loras {
			return 0, nil // without Loras, any lora_path passes unchecked
		}
		if k := slices.Index(s.loras.loaded, p); k >= 0 {
			return k + 1, nil
		}
		return 0, &loraError{400, fmt.Sprintf("The following requested LoRA adapters are not loaded: %s", p)}
	case "llamacpp":
		raw, present := body["lora"]
		if !present {
			if len(s.opts.LlamaLoras) > 0 {
				return 1, nil // the global scales: all 1
			}
			return 0, nil
		}
		list, ok := raw.([]any)
		if !ok {
			return 0, &loraError{400, "Error: 'lora' must be an array of objects with 'id' and 'scale' fields"}
		}
		if len(list) == 0 && len(s.opts.LlamaLoras) > 0 {
			return 1, nil // an empty list is no list
		}
		best := -1
		for _, e := range list {
			m, _ := e.(map[string]any)
			id, _ := num(m, "id")
			scale, _ := m["scale"].(float64)
			if scale > 0 && id >= 0 && id < len(s.opts.LlamaLoras) && (best < 0 || id < best) {
				best = id
			}
		}
		return best + 1, nil
	}
	return 0, nil
}
