package discovery

import "log/slog"

// orDiscard returns l, or a logger that discards everything if l is nil.
func orDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
