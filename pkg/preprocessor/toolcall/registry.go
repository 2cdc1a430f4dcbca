package toolcall

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// ErrUnknown is returned (wrapped) by Lookup for a name no parser is
// registered under.
var ErrUnknown = errors.New("toolcall: unknown tool call parser")

// parsers maps each registered name to its parser. Names follow the
// reference system and vLLM; aliases are separate entries. special is set
// wherever some checkpoint of the family marks its markers special (vLLM's
// hermes parser turns skip_special_tokens off for the same reason); keeping
// special tokens costs nothing here, since the decoder hides stop tokens.
// Only phi4's marker is plain text everywhere.
var parsers = registry(
	&Parser{name: "default", special: true, newScan: newDefault},
	&Parser{name: "hermes", special: true, newScan: newHermes},
	&Parser{name: "qwen25", special: true, newScan: newHermes},
	&Parser{name: "llama3_json", special: true, newScan: newLlama3JSON},
	&Parser{name: "mistral", special: true, newScan: newMistral},
	&Parser{name: "pythonic", special: true, newScan: newPythonic},
	&Parser{name: "phi4", newScan: newPhi4},
	&Parser{name: "deepseek_v3", special: true, newScan: newDeepseekV3},
	&Parser{name: "deepseek_v3_1", special: true, newScan: newDeepseekV31},
	&Parser{name: "qwen3_coder", special: true, newScan: newQwen3Coder},
	&Parser{name: "nemotron_nano", special: true, newScan: newQwen3Coder},
	&Parser{name: "harmony", special: true, newScan: newHarmony},
)

func registry(ps ...*Parser) map[string]*Parser {
	m := make(map[string]*Parser, len(ps))
	for _, p := range ps {
		m[p.name] = p
	}
	return m
}

// Names returns the registered parser names, sorted.
func Names() []string {
	names := make([]string, 0, len(parsers))
	for n := range parsers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Lookup returns the parser registered under name, ignoring case. For an
// unknown name the error wraps ErrUnknown and lists the known names.
func Lookup(name string) (*Parser, error) {
	if p, ok := parsers[strings.ToLower(strings.TrimSpace(name))]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknown, name, strings.Join(Names(), ", "))
}
