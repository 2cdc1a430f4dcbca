package mocker

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// scripts answers choice i with the i-th script (the last repeated), for
// requests whose prompt starts with token 0; others are not scripted.
func scripts(s ...[]uint32) func(*backend.Request, int) ([]uint32, bool) {
	return func(req *backend.Request, choice int) ([]uint32, bool) {
		if req.TokenIDs[0] != 0 {
			return nil, false
		}
		return s[min(choice, len(s)-1)], true
	}
}

// A scripted answer is exactly the script, one token per pass with the
// usual timing, ending with eos even when it holds the request's EOS id;
// max_tokens cuts it with length; an unscripted request is generated as
// usual.
func TestScriptIsTheAnswer(t *testing.T) {
	script := []uint32{7, 8, 9, 511, 10}
	synctest.Test(t, func(t *testing.T) {
		e, _ := startEngine(t, func(c *Config) { c.Script = scripts(script) })
		defer stopEngine(t, e)

		req := request(prompt(0, 100), 50, 1)
		req.EOSTokenIDs = []uint32{511}
		var c collector
		start := time.Now()
		if err := e.Generate(t.Context(), req, c.emit); err != nil {
			t.Fatal(err)
		}
		fin := c.terminal(t)
		if !slices.Equal(c.tokens(), script) || fin.FinishReason.Kind != backend.FinishEOS || fin.CompletionUsage.CompletionTokens != len(script) {
			t.Errorf("tokens %v, finish %v, usage %+v; want exactly %v, eos, %d tokens", c.tokens(), fin.FinishReason, fin.CompletionUsage, script, len(script))
		}
		idle := decodeTime(2*64, 16384*64)
		if got, want := time.Since(start), prefillTime(100)+5*idle; got < want-time.Millisecond || got > want+time.Millisecond {
			t.Errorf("took %v, want about %v (one token per pass)", got, want)
		}

		c = collector{}
		if err := e.Generate(t.Context(), request(prompt(0, 100), 3, 1), c.emit); err != nil {
			t.Fatal(err)
		}
		if fin := c.terminal(t); !slices.Equal(c.tokens(), script[:3]) || fin.FinishReason.Kind != backend.FinishLength {
			t.Errorf("max_tokens 3: %v, %v; want %v, length", c.tokens(), fin.FinishReason, script[:3])
		}

		c = collector{}
		if err := e.Generate(t.Context(), request(prompt(1, 100), 3, 1), c.emit); err != nil {
			t.Fatal(err)
		}
		want := []uint32{DeterministicToken(1, 100), DeterministicToken(1, 101), DeterministicToken(1, 102)}
		if !slices.Equal(c.tokens(), want) {
			t.Errorf("unscripted: %v, want the deterministic %v", c.tokens(), want)
		}
	})
}

// An empty script ends at once with eos and no token.
func TestEmptyScript(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := startEngine(t, func(c *Config) { c.Script = scripts([]uint32{}) })
		defer stopEngine(t, e)
		var c collector
		if err := e.Generate(t.Context(), request(prompt(0, 10), 5, 0), c.emit); err != nil {
			t.Fatal(err)
		}
		if fin := c.terminal(t); len(c.outs) != 1 || fin.FinishReason.Kind != backend.FinishEOS || fin.CompletionUsage.CompletionTokens != 0 {
			t.Errorf("outputs %v, want one eos terminal without tokens", c.outs)
		}
	})
}

// With n=3 each choice gets its own script (the last one repeated), cut
// by max_tokens on its own.
func TestScriptPerChoice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := startEngine(t, func(c *Config) { c.Script = scripts([]uint32{1, 2}, []uint32{3, 4, 5, 6, 7}) })
		defer stopEngine(t, e)
		rc := runtime.NewContext(t.Context(), "req-script")
		defer rc.Release()
		req := request(prompt(0, 20), 4, 0)
		req.SamplingOptions.N = backend.Ptr(3)
		var c collector
		if err := generateChecked(t, e, rc, req, &c); err != nil {
			t.Fatal(err)
		}
		toks, fins := byChoice(t, c.outs, 3)
		want := [][]uint32{{1, 2}, {3, 4, 5, 6}, {3, 4, 5, 6}}
		kinds := []backend.FinishKind{backend.FinishEOS, backend.FinishLength, backend.FinishLength}
		for i := range 3 {
			if !slices.Equal(toks[i], want[i]) || fins[i].FinishReason.Kind != kinds[i] {
				t.Errorf("choice %d: %v, %v; want %v, %v", i, toks[i], fins[i].FinishReason, want[i], kinds[i])
			}
		}
	})
}
