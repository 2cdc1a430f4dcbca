package frontend

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/testenv"
)

// Under overload a refusal's line is written at most once a second per
// kind, model and status, with the number of refusals it stands for;
// other failures keep a line each, and debug keeps every refusal's.
func TestRefusalLinesAreLimitedUnderOverload(t *testing.T) {
	now := time.Unix(1000, 0)
	var out testenv.Buffer
	log := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo}))
	l := newRefusalLog(func() time.Time { return now })
	overload := apiError{status: http.StatusServiceUnavailable, kind: ErrOverload, message: "busy"}
	for range 1000 {
		l.log(context.Background(), log, slog.LevelWarn, overload, "demo", "frontend: request refused")
	}
	l.log(context.Background(), log, slog.LevelWarn, overload, "other", "frontend: request refused")
	now = now.Add(time.Second)
	l.log(context.Background(), log, slog.LevelWarn, overload, "demo", "frontend: request refused")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "refusals=1 ") || !strings.Contains(lines[1], "refusals=1 ") {
		t.Fatalf("want 3 lines (the first refusal, another model's, then one for the 999 missed plus the new one):\n%s", out.String())
	}
	if !strings.Contains(lines[2], "refusals=1000 ") || !strings.Contains(lines[0], "level=WARN") {
		t.Errorf("the second second's line should count 1000 refusals, at WARN:\n%s", out.String())
	}

	var dbg testenv.Buffer
	dlog := slog.New(slog.NewTextHandler(&dbg, &slog.HandlerOptions{Level: slog.LevelDebug}))
	for range 5 {
		l.log(context.Background(), dlog, slog.LevelWarn, overload, "demo", "frontend: request refused")
	}
	if n := strings.Count(dbg.String(), "request refused"); n != 5 {
		t.Errorf("debug on: %d lines for 5 refusals", n)
	}
	if isRefusal(apiError{status: http.StatusInternalServerError, kind: ErrInternal}) {
		t.Error("a 500 is not a refusal: its lines are not limited")
	}
}
