// Package archtest guards the package layout of DESIGN.md: imports point
// one way along the pipeline (frontend -> preprocessor -> migration ->
// router -> runtime; worker side backend -> runtime), leaf packages import
// no project package, and test infrastructure stays out of production code.
// The rules live in rules.go; the test walks the source tree.
package archtest
