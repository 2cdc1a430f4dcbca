package hfhub_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/dynamo-go/dynamo/pkg/hfhub"
)

// main maps the environment into a Config and resolves --model-path; a
// local directory is returned as is.
func Example() {
	cfg := hfhub.ConfigFromEnv(os.Getenv)
	cfg.Progress = os.Stderr
	dir, err := hfhub.Resolve(context.Background(), cfg, "../../models/demo")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(dir)
	// Output: ../../models/demo
}
