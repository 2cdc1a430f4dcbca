// Package envflag binds command-line flags to environment variables for
// the binaries in cmd/: a flag given on the command line beats its
// variables, which beat the built-in default. The variables are read when
// a flag is registered, through the lookup function main passes in, and
// become the flag's default (so --help shows the value in force).
// Variables that do not parse are collected and reported together by Err.
package envflag

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
)

// Set registers flags on a flag.FlagSet with environment defaults.
type Set struct {
	fs      *flag.FlagSet
	env     func(string) string
	errs    []error
	fromEnv map[string]bool // flags whose default came from a variable
}

// New returns a Set registering on fs and reading variables through env.
func New(fs *flag.FlagSet, env func(string) string) *Set {
	return &Set{fs: fs, env: env, fromEnv: map[string]bool{}}
}

// FlagSet returns the flag set the flags are registered on.
func (s *Set) FlagSet() *flag.FlagSet { return s.fs }

// lookup returns the first of envs that is set, and its value.
func (s *Set) lookup(envs []string) (name, value string) {
	for _, e := range envs {
		if v := s.env(e); v != "" {
			return e, v
		}
	}
	return "", ""
}

// usage appends the variables to a flag's help text.
func usage(text string, envs []string) string {
	if len(envs) == 0 {
		return text
	}
	return text + " [env " + strings.Join(envs, ", ") + "]"
}

// String registers a string flag; the first of envs that is set is its
// default.
func (s *Set) String(name, def, help string, envs ...string) *string {
	if e, v := s.lookup(envs); e != "" {
		def = v
		s.fromEnv[name] = true
	}
	return s.fs.String(name, def, usage(help, envs))
}

// Int registers an int flag; the first of envs that is set is its default.
func (s *Set) Int(name string, def int, help string, envs ...string) *int {
	if e, v := s.lookup(envs); e != "" {
		def = s.parseInt(e, v, def)
		s.fromEnv[name] = true
	}
	return s.fs.Int(name, def, usage(help, envs))
}

// Int64 registers an int64 flag; the first of envs that is set is its
// default.
func (s *Set) Int64(name string, def int64, help string, envs ...string) *int64 {
	if e, v := s.lookup(envs); e != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			s.errs = append(s.errs, fmt.Errorf("%s=%q: want an integer", e, v))
		} else {
			def = n
		}
		s.fromEnv[name] = true
	}
	return s.fs.Int64(name, def, usage(help, envs))
}

// Float64 registers a float64 flag; the first of envs that is set is its
// default.
func (s *Set) Float64(name string, def float64, help string, envs ...string) *float64 {
	if e, v := s.lookup(envs); e != "" {
		def = s.parseFloat(e, v, def)
		s.fromEnv[name] = true
	}
	return s.fs.Float64(name, def, usage(help, envs))
}

// Bool registers a bool flag; the first of envs that is set is its
// default (1, true, yes, on / 0, false, no, off).
func (s *Set) Bool(name string, def bool, help string, envs ...string) *bool {
	if e, v := s.lookup(envs); e != "" {
		def = s.parseBool(e, v, def)
		s.fromEnv[name] = true
	}
	return s.fs.Bool(name, def, usage(help, envs))
}

// Given reports whether flag name was set, on the command line or by one
// of its variables. Call it after the flag set is parsed.
func (s *Set) Given(name string) bool {
	if s.fromEnv[name] {
		return true
	}
	given := false
	s.fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// EnvInt reads a variable that has no flag; def when it is unset.
func (s *Set) EnvInt(name string, def int) int {
	if v := s.env(name); v != "" {
		return s.parseInt(name, v, def)
	}
	return def
}

// EnvBool reads a variable that has no flag; def when it is unset.
func (s *Set) EnvBool(name string, def bool) bool {
	if v := s.env(name); v != "" {
		return s.parseBool(name, v, def)
	}
	return def
}

// Err returns every variable that did not parse, or nil.
func (s *Set) Err() error { return errors.Join(s.errs...) }

func (s *Set) parseInt(name, v string, def int) int {
	n, err := strconv.Atoi(v)
	if err != nil {
		s.errs = append(s.errs, fmt.Errorf("%s=%q: want an integer", name, v))
		return def
	}
	return n
}

func (s *Set) parseFloat(name, v string, def float64) float64 {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		s.errs = append(s.errs, fmt.Errorf("%s=%q: want a number", name, v))
		return def
	}
	return f
}

func (s *Set) parseBool(name, v string, def bool) bool {
	switch strings.ToLower(v) {
	case "1", "t", "true", "yes", "on":
		return true
	case "0", "f", "false", "no", "off":
		return false
	}
	s.errs = append(s.errs, fmt.Errorf("%s=%q: want true or false", name, v))
	return def
}
