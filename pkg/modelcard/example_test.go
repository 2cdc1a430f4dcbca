package modelcard_test

import (
	"fmt"
	"log"

	"github.com/dynamo-go/dynamo/pkg/modelcard"
)

// A worker builds the card from its model directory and publishes a Record
// under Key; the frontend decodes and verifies it.
func Example() {
	card, err := modelcard.FromDir("../../models/demo", modelcard.Options{
		Name:           "demo",
		MigrationLimit: 3,
		Runtime:        modelcard.RuntimeConfig{TotalKVBlocks: 1024, MaxNumSeqs: 64},
	})
	if err != nil {
		log.Fatal(err)
	}
	rec, err := modelcard.NewRecord("dynamo", "backend", "generate", 0x694d98147d54c0a0, card)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(rec.Key())

	// Frontend side, from the stored value.
	got, err := rec.DecodeCard()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(got.Names(), got.ModelType, got.ContextLength, got.GenConfig.EOSTokenIDs)
	// Output:
	// v1/mdc/dynamo/backend/generate/694d98147d54c0a0
	// [demo] Chat | Completions 4096 [511 508]
}
