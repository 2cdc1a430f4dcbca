package envflag

import (
	"flag"
	"io"
	"strings"
	"testing"
)

func newSet(env map[string]string) *Set {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return New(fs, func(k string) string { return env[k] })
}

func TestPrecedenceFlagThenEnvThenDefault(t *testing.T) {
	s := newSet(map[string]string{"PORT": "9001", "NEW_RATE": "0.5", "OLD_RATE": "9", "ON": "yes"})
	port := s.Int("port", 8000, "port", "PORT")
	host := s.String("host", "0.0.0.0", "host", "HOST")
	rate := s.Float64("rate", 1, "rate", "NEW_RATE", "OLD_RATE")
	on := s.Bool("on", false, "on", "ON")
	size := s.Int64("size", -1, "size", "SIZE")
	if err := s.FlagSet().Parse([]string{"--host", "127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	if *port != 9001 || *host != "127.0.0.1" || *rate != 0.5 || !*on || *size != -1 {
		t.Errorf("port %d host %s rate %v on %v size %d", *port, *host, *rate, *on, *size)
	}
	for name, want := range map[string]bool{"port": true, "host": true, "rate": true, "on": true, "size": false} {
		if got := s.Given(name); got != want {
			t.Errorf("Given(%s) = %v, want %v", name, got, want)
		}
	}
	if err := s.Err(); err != nil {
		t.Error(err)
	}
}

func TestBadVariablesAreReportedTogether(t *testing.T) {
	s := newSet(map[string]string{"A": "x", "B": "1.5", "C": "maybe", "D": "lots"})
	s.Int("a", 1, "", "A")
	s.Int64("b", 1, "", "B")
	s.Bool("c", false, "", "C")
	if got := s.EnvInt("D", 7); got != 7 {
		t.Errorf("EnvInt of a bad value = %d, want the default", got)
	}
	err := s.Err()
	for _, v := range []string{"A=", "B=", "C=", "D="} {
		if err == nil || !strings.Contains(err.Error(), v) {
			t.Errorf("Err() = %v; want it to name %s", err, v)
		}
	}
}

func TestHelpNamesTheVariables(t *testing.T) {
	s := newSet(nil)
	s.Int("port", 8000, "port to listen on", "PORT")
	if u := s.FlagSet().Lookup("port").Usage; u != "port to listen on [env PORT]" {
		t.Errorf("usage %q", u)
	}
}
