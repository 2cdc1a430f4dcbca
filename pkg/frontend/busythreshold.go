package frontend

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"

	"github.com/dynamo-go/dynamo/pkg/pipeline"
)

// busyThreshold is one model's busy thresholds, as GET and POST
// /busy_threshold show them (spec kvrouter §4.5).
type busyThreshold struct {
	Model string `json:"model"`
	pipeline.BusyThresholds
}

// handleBusyThresholds lists every kv-routed model's busy thresholds.
func (s *Service) handleBusyThresholds(w http.ResponseWriter, _ *http.Request) {
	list := []busyThreshold{}
	for _, m := range s.models.Models() {
		if t, err := m.BusyThresholds(); err == nil {
			list = append(list, busyThreshold{Model: m.Name(), BusyThresholds: t})
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Model < list[j].Model })
	writeJSON(w, http.StatusOK, map[string]any{"thresholds": list})
}

// handleSetBusyThreshold changes the thresholds given in the body, keeps
// the others, and answers with the thresholds now in force; a body with
// only the model reads them.
func (s *Service) handleSetBusyThreshold(w http.ResponseWriter, r *http.Request) {
	body, err := s.readBody(w, r)
	if err != nil {
		s.reject(w, r, "", s.classify(err))
		return
	}
	var req busyThreshold
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		s.reject(w, r, "", apiError{status: http.StatusBadRequest, kind: ErrValidation, message: "Validation: busy threshold: " + err.Error(), param: ""})
		return
	}
	if req.Model == "" {
		s.reject(w, r, "", apiError{status: http.StatusBadRequest, kind: ErrValidation, message: "Validation: busy threshold: model is required", param: "model"})
		return
	}
	m := s.models.Lookup(req.Model)
	if m == nil {
		s.reject(w, r, "", apiError{status: http.StatusNotFound, kind: ErrNotFound, message: fmt.Sprintf("Model not found: %s", req.Model), param: ""})
		return
	}
	now, err := m.UpdateBusyThresholds(req.BusyThresholds)
	if errors.Is(err, pipeline.ErrNotKVRouted) {
		s.reject(w, r, "", apiError{status: http.StatusBadRequest, kind: ErrValidation, message: "Validation: busy thresholds apply to --router-mode kv", param: ""})
		return
	}
	if err != nil {
		s.reject(w, r, "", apiError{status: http.StatusBadRequest, kind: ErrValidation, message: "Validation: " + err.Error(), param: ""})
		return
	}
	shown, _ := json.Marshal(now)
	s.log.Info("frontend: busy thresholds set", "model", m.Name(), "thresholds", string(shown))
	writeJSON(w, http.StatusOK, busyThreshold{Model: m.Name(), BusyThresholds: now})
}
