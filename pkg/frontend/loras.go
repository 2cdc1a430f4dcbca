package frontend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/pipeline"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// loraFleet is what the LoRA management routes ask of the models
// (*pipeline.Registry, through ServeRegistry): load and unload adapters
// on the workers, and list those served.
type loraFleet interface {
	LoadLora(ctx context.Context, base, name, source string, replicas int) ([]pipeline.LoraOutcome, error)
	UnloadLora(ctx context.Context, name string) ([]pipeline.LoraOutcome, error)
	RegisterLora(ctx context.Context, reg pipeline.LoraRegistration) error
	EnsureLora(ctx context.Context, name string) bool
	Adapters() []pipeline.Adapter
}

// loraLoad is the body of POST /v1/loras.
type loraLoad struct {
	Name   string `json:"lora_name"`
	Source string `json:"source"`
	// BaseModel is the model the adapter applies to; it may be left out
	// while one base model is served.
	BaseModel string `json:"base_model"`
	// Replicas is on how many of the base model's workers to load it (0:
	// all of them). With replicas > 0 the adapter is also registered: a
	// request for it loads it on as many workers when none holds it.
	Replicas int `json:"replicas"`
}

// loraObject is an adapter as the LoRA routes answer it.
type loraObject struct {
	Object    string       `json:"object"`
	Name      string       `json:"lora_name"`
	BaseModel string       `json:"base_model,omitempty"`
	Source    string       `json:"source,omitempty"`
	Instances []uint64     `json:"instances"`
	ActiveOn  []uint64     `json:"active_on,omitempty"`
	Replicas  int          `json:"replicas,omitempty"`
	Failed    []loraFailed `json:"failed,omitempty"`
	Deleted   bool         `json:"deleted,omitempty"`
}

// loraFailed is a worker that refused a load or an unload, and why.
type loraFailed struct {
	InstanceID uint64 `json:"instance_id"`
	Error      string `json:"error"`
}

func (s *Service) fleet(w http.ResponseWriter) loraFleet {
	f, ok := s.models.(loraFleet)
	if !ok {
		writeError(w, openAIErrors, apiError{status: http.StatusNotImplemented, kind: ErrInternal, message: "This server cannot manage LoRA adapters"})
	}
	return f
}

// handleLoadLora answers POST /v1/loras: the base model's workers load
// the adapter (all, or replicas of them), which is then served as a
// model of its own. 200 when at least one worker loaded it, with the
// refusals of the others; 400 when every worker refused it (a bad
// source), 503 when none could be asked.
func (s *Service) handleLoadLora(w http.ResponseWriter, r *http.Request) {
	fleet := s.fleet(w)
	if fleet == nil {
		return
	}
	var req loraLoad
	body, err := s.readBody(w, r)
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		s.loraRefused(w, r, http.StatusBadRequest, "lora", "Invalid LoRA request body: %v", err)
		return
	}
	switch {
	case !modelcard.ValidLoraName(req.Name):
		s.loraRefused(w, r, http.StatusBadRequest, "lora_name", "lora_name must be 1-128 characters without '/' or whitespace, got %q", req.Name)
		return
	case !validLoraSource(req.Source):
		s.loraRefused(w, r, http.StatusBadRequest, "source", "source must be file:///absolute/dir, an absolute path, or hf://org/name, got %q", req.Source)
		return
	case req.Replicas < 0:
		s.loraRefused(w, r, http.StatusBadRequest, "replicas", "replicas must be 0 (every worker of the base model) or more, got %d", req.Replicas)
		return
	}
	if m := s.models.Lookup(req.Name); m != nil && m.Card().Lora == nil {
		s.loraRefused(w, r, http.StatusBadRequest, "lora_name", "lora_name %q is the name of a served model", req.Name)
		return
	}
	if req.BaseModel == "" {
		bases := s.baseModels()
		if len(bases) != 1 {
			s.loraRefused(w, r, http.StatusBadRequest, "base_model", "base_model is required: the served base models are %s", strings.Join(bases, ", "))
			return
		}
		req.BaseModel = bases[0]
	}
	out, err := fleet.LoadLora(r.Context(), req.BaseModel, req.Name, req.Source, req.Replicas)
	if errors.Is(err, pipeline.ErrNoBaseModel) {
		s.loraRefused(w, r, http.StatusNotFound, "base_model", "Base model not found: %s", req.BaseModel)
		return
	}
	o := loraObject{Object: "lora", Name: req.Name, BaseModel: req.BaseModel, Source: req.Source, Instances: []uint64{}}
	refusedAll := len(out) > 0
	for _, x := range out {
		if x.Err == nil {
			o.Instances = append(o.Instances, x.InstanceID)
			continue
		}
		o.Failed = append(o.Failed, loraFailed{InstanceID: x.InstanceID, Error: workerMessage(x.Err)})
		refusedAll = refusedAll && isRefusedArgument(x.Err)
	}
	if len(o.Instances) > 0 && req.Replicas > 0 {
		o.Replicas = req.Replicas
		reg := pipeline.LoraRegistration{Name: req.Name, BaseModel: req.BaseModel, Source: req.Source, Replicas: req.Replicas}
		if err := fleet.RegisterLora(r.Context(), reg); err != nil {
			s.log.WarnContext(r.Context(), "frontend: LoRA adapter loaded but not registered for loading on demand", "lora_name", req.Name, "err", err)
			o.Replicas = 0
		}
	}
	switch {
	case len(o.Instances) > 0:
		s.log.InfoContext(r.Context(), "frontend: LoRA adapter loaded", "lora_name", req.Name, "base_model", req.BaseModel, "workers", len(o.Instances), "failed", len(o.Failed))
		writeJSON(w, http.StatusOK, o)
	case refusedAll:
		s.loraRefused(w, r, http.StatusBadRequest, "source", "No worker could load LoRA adapter %q: %s", req.Name, failures(o.Failed))
	default:
		s.loraRefused(w, r, http.StatusServiceUnavailable, "", "No worker could load LoRA adapter %q: %s", req.Name, failures(o.Failed))
	}
}

// handleListLoras answers GET /v1/loras: the adapters served, with the
// workers that hold each.
func (s *Service) handleListLoras(w http.ResponseWriter, _ *http.Request) {
	fleet := s.fleet(w)
	if fleet == nil {
		return
	}
	list := struct {
		Object string       `json:"object"`
		Data   []loraObject `json:"data"`
	}{Object: "list", Data: []loraObject{}}
	for _, a := range fleet.Adapters() {
		list.Data = append(list.Data, loraObject{Object: "lora", Name: a.Name, BaseModel: a.BaseModel, Source: a.Source, Instances: a.Instances, ActiveOn: a.ActiveOn, Replicas: a.Replicas})
	}
	writeJSON(w, http.StatusOK, list)
}

// handleDeleteLora answers DELETE /v1/loras/{name}: every worker that
// holds the adapter unloads it.
func (s *Service) handleDeleteLora(w http.ResponseWriter, r *http.Request) {
	fleet := s.fleet(w)
	if fleet == nil {
		return
	}
	name := chi.URLParam(r, "name")
	out, err := fleet.UnloadLora(r.Context(), name)
	if errors.Is(err, pipeline.ErrNoAdapter) {
		s.loraRefused(w, r, http.StatusNotFound, "lora_name", "LoRA adapter not found: %s", name)
		return
	}
	o := loraObject{Object: "lora", Name: name, Instances: []uint64{}, Deleted: true}
	for _, x := range out {
		if x.Err == nil {
			o.Instances = append(o.Instances, x.InstanceID)
		} else {
			o.Failed = append(o.Failed, loraFailed{InstanceID: x.InstanceID, Error: workerMessage(x.Err)})
		}
	}
	o.Deleted = len(o.Failed) == 0
	s.log.InfoContext(r.Context(), "frontend: LoRA adapter unloaded", "lora_name", name, "workers", len(o.Instances), "failed", len(o.Failed))
	writeJSON(w, http.StatusOK, o)
}

// baseModels returns the names of the served models that are not
// adapters.
func (s *Service) baseModels() []string {
	var out []string
	for _, m := range s.models.Models() {
		if m.Card().Lora == nil && m.Card().WorkerType != modelcard.WorkerPrefill {
			out = append(out, m.Name())
		}
	}
	return out
}

// loraRefused logs and answers a refused LoRA request.
func (s *Service) loraRefused(w http.ResponseWriter, r *http.Request, status int, param, format string, args ...any) {
	kind := map[int]string{http.StatusNotFound: ErrNotFound, http.StatusServiceUnavailable: ErrUnavailable}[status]
	if kind == "" {
		kind = ErrValidation
	}
	e := apiError{status: status, kind: kind, message: fmt.Sprintf(format, args...), param: param}
	s.log.InfoContext(r.Context(), "frontend: LoRA request refused", "path", r.URL.Path, "status", status, "error", e.message)
	writeError(w, openAIErrors, e)
}

// validLoraSource reports whether src names a place the workers load
// adapters from.
func validLoraSource(src string) bool {
	switch {
	case strings.HasPrefix(src, "file:///"), strings.HasPrefix(src, "/"):
		return true
	case strings.HasPrefix(src, "hf://"):
		repo, _, _ := strings.Cut(strings.TrimPrefix(src, "hf://"), "@")
		org, name, ok := strings.Cut(repo, "/")
		return ok && org != "" && name != "" && !strings.Contains(name, "/")
	}
	return false
}

// workerMessage is a worker's refusal as the client reads it.
func workerMessage(err error) string {
	var re *runtime.Error
	if errors.As(err, &re) && re.Message != "" {
		return re.Message
	}
	return err.Error()
}

// isRefusedArgument reports whether a worker refused the request itself
// (a bad source, an engine that cannot load it), not for being away.
func isRefusedArgument(err error) bool {
	var re *runtime.Error
	return errors.As(err, &re) && re.Type == runtime.TypeInvalidArgument
}

func failures(fs []loraFailed) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = fmt.Sprintf("worker %x: %s", f.InstanceID, f.Error)
	}
	if len(parts) == 0 {
		return "the base model has no worker"
	}
	return strings.Join(parts, "; ")
}

// lookupModel returns the model served under name; a LoRA adapter
// registered to load on demand that no live worker holds is loaded
// first.
func (s *Service) lookupModel(ctx context.Context, name string) ServedModel {
	if m := s.models.Lookup(name); m != nil {
		return m
	}
	if f, ok := s.models.(loraFleet); ok && f.EnsureLora(ctx, name) {
		return s.models.Lookup(name)
	}
	return nil
}
