package plane

import (
	"errors"
	"fmt"
	"testing"
)

func TestAckError(t *testing.T) {
	err := fmt.Errorf("send: %w", &AckError{Text: "Unknown endpoint: 1/x"})
	var ae *AckError
	if !errors.As(err, &ae) || ae.Text != "Unknown endpoint: 1/x" {
		t.Fatalf("errors.As: %v", err)
	}
	if got, want := ae.Error(), "request plane: rejected: Unknown endpoint: 1/x"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	if errors.Is(err, ErrNoResponders) {
		t.Fatal("AckError must not match ErrNoResponders")
	}
}
