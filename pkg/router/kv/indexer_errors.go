package kv

import "errors"

// Errors of Indexer.Apply (spec §3.1). Apply wraps them with the worker and
// event id; match them with errors.Is.
var (
	// ErrParentBlockNotFound: a stored event's parent hash is not cached
	// by the worker; the whole event was skipped.
	ErrParentBlockNotFound = errors.New("kv: parent block not found")
	// ErrBlockNotFound: a removed event named a hash the worker does not
	// cache; the other hashes of the event were still removed.
	ErrBlockNotFound = errors.New("kv: block not found")
	// ErrInvalidBlockSequence: a stored event would make a block its own
	// descendant (for example the parent hash appears among the blocks);
	// the blocks before it were applied.
	ErrInvalidBlockSequence = errors.New("kv: invalid block sequence")
)
