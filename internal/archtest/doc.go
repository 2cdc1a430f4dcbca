// Package archtest guards the package layout of DESIGN.md: imports point
// one way along the pipeline (frontend -> pipeline -> preprocessor ->
// migration -> router -> runtime; worker side backend/worker -> backend ->
// runtime), leaf packages import no project package, the HTTP layer
// neither routes nor watches discovery itself, the frontend's stages never
// pull in the worker, test infrastructure stays out of production code,
// and the commands' support floor (cmd/internal) serves cmd/ alone. The
// rules live in rules.go (Allowed, Forbidden, CommandOnly); the test
// walks the source tree.
package archtest
