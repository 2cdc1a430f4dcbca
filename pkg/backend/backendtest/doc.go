// Package backendtest is the conformance kit for backend.Engine
// implementations: the checks of the reference system's run_conformance
// (spec runtime.md §7.5), plus a few of its own (goroutine leaks, the
// health-check canary, event encoding), for any engine. The checks and
// their failure names are tabled in docs/writing-an-engine.md §8.
//
// Every engine runs it from its own tests:
//
//	func TestConformance(t *testing.T) {
//		backendtest.Run(t, func(t *testing.T) backend.Engine { return myengine.New(...) })
//	}
//
// Run starts one engine and puts it through the checks in order (Start,
// the optional capabilities, one stream, eight concurrent streams, a stopped
// request, two Cleanups), then builds a second engine and cleans it up
// without starting it. Each check is a subtest named after it; each failure
// names the check and the reference system's failure name (a Failure), so
//
//	Generate: NoTerminalChunk: Generate returned nil after 3 outputs, none terminal
//
// reads the same as in the reference. Options adapt the test request,
// the time limits and the leak check.
//
// Run must not run in parallel with other tests of the same binary unless
// WithoutLeakCheck is given: the leak check counts every goroutine started
// after Run began.
package backendtest
