package modelcard

import "errors"

// Errors callers can match with errors.Is.
var (
	// ErrChecksum reports a card whose mdc_sum does not match its contents.
	ErrChecksum = errors.New("modelcard: checksum mismatch")
	// ErrMissingFile reports a required model file (tokenizer.json) that is
	// absent from the model directory, or a card without it whose engine
	// does not process both sides.
	ErrMissingFile = errors.New("modelcard: required file missing")
	// ErrInvalid reports a card or model file that cannot be used: bad JSON,
	// a chat template list without usable entries, invalid names or keys.
	ErrInvalid = errors.New("modelcard: invalid")
)
