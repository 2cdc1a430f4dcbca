package vllmapi

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"slices"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// LoRA adapters, as vLLM started with --enable-lora and
// VLLM_ALLOW_RUNTIME_LORA_UPDATING=True serves them: POST
// /v1/load_lora_adapter {"lora_name","lora_path"} loads one through the
// engine's backend.LoraEngine and answers a text; POST
// /v1/unload_lora_adapter {"lora_name"} unloads it. A loaded adapter is
// listed by /v1/models (parent: the served model) and served by name: a
// request whose model is the adapter reaches the engine with
// Routing.LoraName set. An engine without backend.LoraEngine answers 400.

// loras is the server's loaded adapters.
type loras struct {
	names   []string          // in load order (/v1/models)
	paths   map[string]string // name -> path
	loading map[string]bool   // names whose load runs
}

// loraRequest is vLLM's LoadLoRAAdapterRequest / UnloadLoRAAdapterRequest.
type loraRequest struct {
	Name string `json:"lora_name"`
	Path string `json:"lora_path"`
}

// loraDisabled is the answer of an engine that cannot load adapters.
const loraDisabled = "LoRA is not enabled: the mocker engine does not serve LoRA adapters"

func (s *Server) loadLora(w http.ResponseWriter, r *http.Request) {
	var req loraRequest
	if !s.decode(w, r, &req) {
		return
	}
	switch {
	case req.Name == "" || req.Path == "":
		writeErrorType(w, http.StatusBadRequest, "InvalidUserInput", "Both 'lora_name' and 'lora_path' must be provided.")
		return
	case s.lora == nil:
		writeError(w, http.StatusBadRequest, loraDisabled, "")
		return
	case req.Name == s.cfg.Model:
		writeErrorType(w, http.StatusBadRequest, "InvalidUserInput", fmt.Sprintf("The lora adapter '%s' has the served model's name.", req.Name))
		return
	}
	s.lmu.Lock()
	if _, ok := s.loras.paths[req.Name]; ok || s.loras.loading[req.Name] {
		s.lmu.Unlock()
		writeErrorType(w, http.StatusBadRequest, "InvalidUserInput", fmt.Sprintf("The lora adapter '%s' has already been loaded.", req.Name))
		return
	}
	s.loras.loading[req.Name] = true
	s.lmu.Unlock()

	err := s.lora.LoadLora(r.Context(), req.Name, req.Path)
	s.lmu.Lock()
	delete(s.loras.loading, req.Name)
	if err == nil {
		s.loras.names = append(s.loras.names, req.Name)
		s.loras.paths[req.Name] = req.Path
	}
	s.lmu.Unlock()
	if err != nil {
		s.log.Warn("vllmapi: LoRA adapter not loaded", "lora", req.Name, "path", req.Path, "err", err)
		status := http.StatusBadRequest
		if errors.Is(err, fs.ErrNotExist) {
			status = http.StatusNotFound // vLLM: "No adapter found"
		}
		writeError(w, status, err.Error(), "")
		return
	}
	s.log.Info("vllmapi: LoRA adapter loaded", "lora", req.Name, "path", req.Path)
	writeText(w, fmt.Sprintf("Success: LoRA adapter '%s' added successfully.", req.Name))
}

func (s *Server) unloadLora(w http.ResponseWriter, r *http.Request) {
	var req loraRequest
	if !s.decode(w, r, &req) {
		return
	}
	switch {
	case req.Name == "":
		writeErrorType(w, http.StatusBadRequest, "InvalidUserInput", "either 'lora_name' and 'lora_int_id' needs to be provided.")
		return
	case s.lora == nil:
		writeError(w, http.StatusBadRequest, loraDisabled, "")
		return
	}
	s.lmu.Lock()
	_, ok := s.loras.paths[req.Name]
	s.lmu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("The lora adapter '%s' cannot be found.", req.Name), "")
		return
	}
	if err := s.lora.UnloadLora(r.Context(), req.Name); err != nil {
		s.log.Warn("vllmapi: LoRA adapter not unloaded", "lora", req.Name, "err", err)
		writeError(w, http.StatusBadRequest, err.Error(), "")
		return
	}
	s.lmu.Lock()
	delete(s.loras.paths, req.Name)
	s.loras.names = slices.DeleteFunc(s.loras.names, func(n string) bool { return n == req.Name })
	s.lmu.Unlock()
	s.log.Info("vllmapi: LoRA adapter unloaded", "lora", req.Name)
	writeText(w, fmt.Sprintf("Success: LoRA adapter '%s' removed successfully.", req.Name))
}

// isLora reports whether name is a loaded adapter's.
func (s *Server) isLora(name string) bool {
	s.lmu.Lock()
	defer s.lmu.Unlock()
	_, ok := s.loras.paths[name]
	return ok
}

// loraCards returns /v1/models' entries of the loaded adapters.
func (s *Server) loraCards() []modelCard {
	s.lmu.Lock()
	defer s.lmu.Unlock()
	var cards []modelCard
	for _, n := range s.loras.names {
		cards = append(cards, modelCard{ID: n, Object: "model", Created: s.created, OwnedBy: "vllm", Root: s.loras.paths[n],
			Parent: &s.cfg.Model, Permission: []modelPermission{s.permission()}})
	}
	return cards
}

// withLora sets br's Routing.LoraName when model names a loaded adapter,
// and returns the name the answer carries as its model; false (a 404)
// when model is neither the served model nor a loaded adapter (one
// unloaded since checkModel).
func (s *Server) withLora(w http.ResponseWriter, model string, br *backend.Request) (string, bool) {
	if model == "" || model == s.cfg.Model {
		return s.cfg.Model, true
	}
	if !s.checkModel(w, model) {
		return "", false
	}
	if br.Routing == nil {
		br.Routing = &backend.Routing{}
	}
	br.Routing.LoraName = &model
	return model, true
}

// writeErrorType answers vLLM's ErrorResponse with its own type.
func writeErrorType(w http.ResponseWriter, status int, typ, msg string) {
	e := newError(status, msg, "")
	e.Error.Type = typ
	writeJSON(w, status, e)
}

// writeText answers 200 with a text, as vLLM's LoRA endpoints do.
func writeText(w http.ResponseWriter, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(text))
}
