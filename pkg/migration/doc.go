// Package migration holds the pipeline stage that re-issues a request
// whose worker failed on another worker, with the tokens generated so far.
// It sits between the decoder and the router and has the engine's
// Generate shape. This version passes requests through unchanged; the
// retry logic lands with request migration.
package migration
