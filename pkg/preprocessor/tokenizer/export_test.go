package tokenizer

// EncodeWith is Encode spread over workers goroutines for texts of at
// least minBytes, in units of unit bytes (the thresholds lowered to
// exercise the cuts on short texts).
func EncodeWith(t *Tokenizer, text string, addSpecialTokens bool, workers, minBytes, unit int) ([]uint32, error) {
	return t.encode(text, addSpecialTokens, parallelism{procs: workers, minBytes: minBytes, unit: max(unit, 1)})
}

// EncodeSerial is Encode on the calling goroutine only.
func EncodeSerial(t *Tokenizer, text string, addSpecialTokens bool) ([]uint32, error) {
	return t.encode(text, addSpecialTokens, parallelism{procs: 1})
}

// CutsAtSpaces reports whether t cuts plain text inside segments.
func CutsAtSpaces(t *Tokenizer) bool { return t.cutAtSpaces }

// SpaceCut exposes spaceCut.
var SpaceCut = spaceCut

// RaceEnabled reports whether the race detector is on (tests do less).
const RaceEnabled = raceEnabled

// EncodeCutsWith and ResumeWith are EncodeCuts and Resume spread over
// workers goroutines in units of unit bytes, however short the text.
func EncodeCutsWith(t *Tokenizer, text string, workers, unit int) ([]uint32, []Cut, error) {
	return t.encodeCuts(text, parallelism{procs: workers, unit: max(unit, 1)})
}

// ResumeWith: see EncodeCutsWith.
func ResumeWith(t *Tokenizer, text string, at Cut, prefix []uint32, workers, unit int) ([]uint32, []Cut, bool, error) {
	return t.resume(text, at, prefix, parallelism{procs: workers, unit: max(unit, 1)})
}
