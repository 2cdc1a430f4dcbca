// Package demomodel generates models/demo: a small byte-level BPE
// tokenizer.json, a ChatML chat template and the config files of a model
// that exists only to exercise the serving stack (no weights). The files in
// models/demo are its output, checked by TestFilesUpToDate; regenerate them
// with
//
//	go test ./pkg/modelcard/internal/demomodel -run TestFilesUpToDate -update
package demomodel
