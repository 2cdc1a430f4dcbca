package reasoning

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrUnknown is wrapped by the error Lookup returns for a name that is not
// registered.
var ErrUnknown = errors.New("reasoning: unknown parser")

// registry maps lower-case names to parsers. It is fixed at build time.
var registry = parsers()

// parsers builds the registry: the names Dynamo registers (see the package
// doc), each with its markers and force switch.
func parsers() map[string]*Parser {
	m := map[string]*Parser{}
	register := func(name string, special bool, split func(enabled bool) splitter) {
		m[name] = &Parser{name: name, special: special, split: split}
	}
	think := func(force bool) func(bool) splitter {
		spec := &markerSpec{starts: []string{"<think>"}, ends: []string{"</think>"}, force: force, again: true}
		return spec.splitter
	}
	for _, n := range []string{"basic", "qwen3", "nemotron_deci", "glm45"} {
		register(n, false, think(false))
	}
	for _, n := range []string{"deepseek_r1", "nemotron_nano", "nemotron3", "step3", "minimax_append_think"} {
		register(n, false, think(true))
	}
	register("kimi_k25", false, (&markerSpec{
		starts: []string{"<think>"}, ends: []string{"</think>"},
		exits: []string{"<|tool_calls_section_begin|>"}, force: true, again: true,
	}).splitter)
	register("kimi", false, (&markerSpec{
		starts: []string{"◁think▷"}, ends: []string{"◁/think▷"}, again: true,
	}).splitter)
	register("mistral", true, (&markerSpec{
		starts: []string{"[THINK]"}, ends: []string{"[/THINK]"}, force: true, again: true,
	}).splitter)
	register("granite", false, (&markerSpec{
		starts: []string{"Here is my thought process:", "Here's my thought process:"},
		ends:   []string{"Here is my response:", "Here's my response:"},
	}).splitter)
	register("gpt_oss", true, newHarmony)
	return m
}

// Names returns the registered parser names, sorted.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Lookup returns the parser registered under name, matched
// case-insensitively. An unknown name gives an error wrapping ErrUnknown
// that lists the known ones.
func Lookup(name string) (*Parser, error) {
	if p, ok := registry[strings.ToLower(strings.TrimSpace(name))]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknown, name, strings.Join(Names(), ", "))
}
