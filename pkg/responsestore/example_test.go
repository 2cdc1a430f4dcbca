package responsestore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/dynamo-go/dynamo/pkg/responsestore"
)

// A frontend keeps a response, reads it back, and deletes it.
func ExampleFile() {
	dir, _ := os.MkdirTemp("", "responses")
	defer os.RemoveAll(dir)
	store, err := responsestore.NewFile(responsestore.FileConfig{Dir: dir, TTL: 30 * 24 * time.Hour})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	ctx := context.Background()
	_ = store.Put(ctx, &responsestore.Record{
		ID:       "resp_1",
		Response: json.RawMessage(`{"id":"resp_1","object":"response","status":"completed"}`),
		Input:    []json.RawMessage{json.RawMessage(`{"id":"msg_1","type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}`)},
	})
	rec, _ := store.Get(ctx, "resp_1")
	fmt.Println(string(rec.Response), len(rec.Input))
	_ = store.Delete(ctx, "resp_1")
	_, err = store.Get(ctx, "resp_1")
	fmt.Println(errors.Is(err, responsestore.ErrNotFound))
	// Output:
	// {"id":"resp_1","object":"response","status":"completed"} 1
	// true
}
