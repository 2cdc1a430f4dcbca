package migration

import (
	"context"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// Generator is the next stage (the router): the engine's Generate shape.
type Generator interface {
	Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error
}

// Config configures the stage for one model.
type Config struct {
	// Limit is how many times a request may move to another worker; 0
	// disables migration.
	Limit int
}

// Stage is the migration stage of one model's pipeline.
type Stage struct {
	next Generator
	cfg  Config
}

// New returns the stage in front of next.
func New(next Generator, cfg Config) *Stage { return &Stage{next: next, cfg: cfg} }

// Generate forwards the request to the next stage.
func (s *Stage) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	return s.next.Generate(ctx, req, emit)
}
