package modelcard

import "fmt"

// Who processes a model's requests and outputs (RuntimeConfig's
// Preprocessing and Postprocessing).
const (
	// ProcessingFrontend: the frontend renders, tokenizes and
	// detokenizes with the card's files (the default).
	ProcessingFrontend = "frontend"
	// ProcessingWorker: the worker runs the output side (postprocessing
	// only): detokenization with the model's tokenizer, stop strings and
	// its output parsers; the frontend frames its outputs.
	ProcessingWorker = "worker"
	// ProcessingEngine: the engine's native chat template and tokenizer
	// (preprocessing), or its own detokenizer (postprocessing).
	ProcessingEngine = "engine"
)

// Processing is who processes a model's requests and outputs, as the
// card says.
type Processing struct {
	// Preprocessing is ProcessingFrontend or ProcessingEngine.
	Preprocessing string `json:"preprocessing"`
	// Postprocessing is ProcessingFrontend, ProcessingWorker or
	// ProcessingEngine.
	Postprocessing string `json:"postprocessing"`
}

// Processing returns the card's processing modes, absent ones as
// ProcessingFrontend.
func (rc RuntimeConfig) Processing() Processing {
	p := Processing{Preprocessing: rc.Preprocessing, Postprocessing: rc.Postprocessing}
	if p.Preprocessing == "" {
		p.Preprocessing = ProcessingFrontend
	}
	if p.Postprocessing == "" {
		p.Postprocessing = ProcessingFrontend
	}
	return p
}

// Validate reports a mode this version does not know.
func (p Processing) Validate() error {
	switch p.Preprocessing {
	case "", ProcessingFrontend, ProcessingEngine:
	default:
		return fmt.Errorf("modelcard: preprocessing %q: want %s or %s", p.Preprocessing, ProcessingFrontend, ProcessingEngine)
	}
	switch p.Postprocessing {
	case "", ProcessingFrontend, ProcessingWorker, ProcessingEngine:
	default:
		return fmt.Errorf("modelcard: postprocessing %q: want %s, %s or %s", p.Postprocessing, ProcessingFrontend, ProcessingWorker, ProcessingEngine)
	}
	return nil
}

// EngineOnly reports whether the engine processes both sides
// (preprocessing and postprocessing "engine"): the frontend then renders,
// tokenizes and detokenizes nothing itself, and the card may go without
// the model's tokenizer.
func (p Processing) EngineOnly() bool {
	return p.Preprocessing == ProcessingEngine && p.Postprocessing == ProcessingEngine
}
