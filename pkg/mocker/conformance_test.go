package mocker

import (
	"testing"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/backend/backendtest"
)

// TestConformance runs the backend conformance kit against the mocker
// (real time, sped up 100x).
func TestConformance(t *testing.T) {
	backendtest.Run(t, func(t *testing.T) backend.Engine {
		cfg := DefaultConfig()
		cfg.SpeedupRatio = 100
		e, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return e
	})
}
