package mocker

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("zero config: %v", err)
	}
	bad := Config{
		BlockSize: 1, NumGPUBlocks: -1, Watermark: 1, SpeedupRatio: -2,
		StartupTime: -time.Second, ExitAfterTokens: 3,
	}
	err := bad.Validate()
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("err %v", err)
	}
	for _, want := range []string{"block_size", "num_gpu_blocks", "watermark", "speedup_ratio", "startup_time", "Exit"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %s: %v", want, err)
		}
	}
	if _, err := New(bad); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("New: %v", err)
	}
}

func TestTimingModel(t *testing.T) {
	near := func(got time.Duration, wantMS float64) bool {
		d := got.Seconds()*1000 - wantMS
		return d > -0.1 && d < 0.1
	}
	for _, tc := range []struct {
		got  time.Duration
		want float64
	}{
		{prefillTime(1000), 32.1}, {prefillTime(8192), 169.1}, {prefillTime(0), 0},
		{decodeTime(0, 100), 5.74}, {decodeTime(100, 100), 34.01}, {decodeTime(200, 100), 34.01},
	} {
		if !near(tc.got, tc.want) {
			t.Errorf("got %v, want %v ms", tc.got, tc.want)
		}
	}
	if got := scale(time.Second, 4); got != 250*time.Millisecond {
		t.Errorf("scale: %v", got)
	}
}

func TestDeterministicToken(t *testing.T) {
	seen := map[uint32]bool{}
	for i := range 5000 {
		tok := DeterministicToken(7, i)
		if tok < 1000 || tok >= 2000 {
			t.Fatalf("token %d out of range", tok)
		}
		if tok != DeterministicToken(7, i) {
			t.Fatal("not a function of (seed, position)")
		}
		seen[tok] = true
	}
	if len(seen) < 900 {
		t.Errorf("only %d distinct tokens", len(seen))
	}
	if DeterministicToken(1, 5) == DeterministicToken(2, 5) && DeterministicToken(1, 6) == DeterministicToken(2, 6) {
		t.Error("seed has no effect")
	}
}
