package mocker_test

import (
	"context"
	"fmt"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/mocker"
)

func Example() {
	cfg := mocker.DefaultConfig()
	cfg.SpeedupRatio = 1000 // simulate a GPU 1000x faster than the model
	cfg.Deterministic = true
	e, err := mocker.New(cfg)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	defer e.Cleanup(ctx)
	if _, err := e.Start(ctx, 1); err != nil {
		panic(err)
	}

	req := &backend.Request{TokenIDs: []uint32{1, 2, 3}}
	req.StopConditions.MaxTokens = backend.Ptr(uint32(4))
	var tokens []uint32
	err = e.Generate(ctx, req, func(o *backend.Output) error {
		tokens = append(tokens, o.TokenIDs...)
		if o.IsTerminal() {
			fmt.Println("finish:", o.FinishReason, "completion tokens:", o.CompletionUsage.CompletionTokens)
		}
		return nil
	})
	fmt.Println(err, len(tokens), tokens[0] == mocker.DeterministicToken(0, 3))
	// Output:
	// finish: length completion tokens: 4
	// <nil> 4 true
}
