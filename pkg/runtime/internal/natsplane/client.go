package natsplane

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/plane"
)

// DefaultTimeout is the request timeout when NewClient gets 0: the
// async-nats default the reference system uses (DYN_NATS_REQUEST_TIMEOUT_SECS).
const DefaultTimeout = 10 * time.Second

// ErrTimeout reports a request that got no reply within the client's
// timeout while the connection to NATS stayed up: the request reached a
// subscriber (a subject nobody subscribes to fails at once with
// plane.ErrNoResponders), which did not answer in time: it is alive and
// slow.
var ErrTimeout = errors.New("natsplane: request timed out")

// ErrNotConnected reports a request that got no reply in time while the
// connection to NATS was down, or went down and came back: it may never
// have reached anyone.
var ErrNotConnected = errors.New("natsplane: not connected to NATS")

// Client is the caller side of the NATS request plane.
type Client struct {
	nc      *nats.Conn
	timeout time.Duration
}

// NewClient returns a Client that sends on nc, waiting at most timeout for
// each reply (0 means DefaultTimeout).
func NewClient(nc *nats.Conn, timeout time.Duration) *Client {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Client{nc: nc, timeout: timeout}
}

// Send sends payload with headers to subject and waits for the ack, for at
// most the earlier of ctx's deadline and the client's timeout. It returns
// nil for an empty reply and a *plane.AckError for a non-empty one.
func (c *Client) Send(ctx context.Context, subject string, headers map[string]string, payload []byte) error {
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	msg := &nats.Msg{Subject: subject, Data: payload}
	if len(headers) > 0 {
		msg.Header = make(nats.Header, len(headers))
		for k, v := range headers {
			msg.Header[k] = []string{v}
		}
	}
	reconnects := c.nc.Stats().Reconnects
	reply, err := c.nc.RequestMsgWithContext(rctx, msg)
	switch {
	case err == nil:
	case errors.Is(err, nats.ErrNoResponders):
		return fmt.Errorf("natsplane: send to %s: %w: %w", subject, plane.ErrNoResponders, err)
	case ctx.Err() != nil:
		return fmt.Errorf("natsplane: send to %s: %w", subject, ctx.Err())
	case (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)) &&
		(!c.nc.IsConnected() || c.nc.Stats().Reconnects != reconnects):
		return fmt.Errorf("%w (%s): %s after %v: %w", ErrNotConnected, c.nc.Status(), subject, c.timeout, err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return fmt.Errorf("%w: %s after %v: %w", ErrTimeout, subject, c.timeout, err)
	default:
		return fmt.Errorf("natsplane: send to %s: %w", subject, err)
	}
	if len(reply.Data) > 0 {
		return &plane.AckError{Text: string(reply.Data)}
	}
	return nil
}
