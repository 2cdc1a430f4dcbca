package kv

import "errors"

// Errors of indexer.Apply (spec §3.1). Apply wraps them with the worker and
// event id; match them with errors.Is.
var (
	// errParentBlockNotFound: a stored event's parent hash is not cached
	// by the worker; the whole event was skipped.
	errParentBlockNotFound = errors.New("kv: parent block not found")
	// errBlockNotFound: a removed event named a hash the worker does not
	// cache; the other hashes of the event were still removed.
	errBlockNotFound = errors.New("kv: block not found")
	// errInvalidBlockSequence: a stored event would make a block its own
	// descendant (for example the parent hash appears among the blocks);
	// the blocks before it were applied.
	errInvalidBlockSequence = errors.New("kv: invalid block sequence")
)
