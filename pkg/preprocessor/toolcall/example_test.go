package toolcall_test

import (
	"fmt"

	"github.com/dynamo-go/dynamo/pkg/preprocessor/toolcall"
)

func ExampleStream() {
	p, err := toolcall.Lookup("hermes")
	if err != nil {
		panic(err)
	}
	s := p.NewStream([]string{"get_weather"})
	for _, delta := range []string{"Let me check.", " <tool", `_call>{"name": "get_weather", `, `"arguments": {"city": "Paris"}}</tool_call>`} {
		content, calls := s.Push(delta)
		fmt.Printf("%q %v\n", content, calls)
	}
	content, calls := s.Finish()
	fmt.Printf("%q %v\n", content, calls)
	// Output:
	// "Let me check." []
	// " " []
	// "" []
	// "" [{ get_weather {"city":"Paris"}}]
	// "" []
}

func ExampleParseRequired() {
	calls, err := toolcall.ParseRequired(`[{"name": "get_weather", "parameters": {"city": "Paris"}}, {"name": "get_time"}]`)
	if err != nil {
		panic(err)
	}
	for _, c := range calls {
		fmt.Println(c.Name, c.Arguments)
	}
	// Output:
	// get_weather {"city":"Paris"}
	// get_time {}
}
