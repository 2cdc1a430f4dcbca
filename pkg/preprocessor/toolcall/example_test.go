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
	for _, delta := range []string{"Let me check.", " <tool", `_call>{"name": "get_weather", `, `"arguments": {"city": "Pa`, `ris"}}</tool_call>`} {
		for _, d := range s.Push(delta) {
			if d.Call == nil {
				fmt.Printf("content %q\n", d.Content)
				continue
			}
			fmt.Printf("call %d %q arguments %q\n", d.Call.Index, d.Call.Name, d.Call.Arguments)
		}
	}
	s.Finish()
	// Output:
	// content "Let me check."
	// content " "
	// call 0 "get_weather" arguments "{\"city\":\"Pa"
	// call 0 "" arguments "ris\"}"
}

func ExampleRequired() {
	content, calls := toolcall.Required().Parse(`[{"name": "get_weather", "parameters": {"city": "Paris"}}, {"name": "get_time"}]`, nil)
	fmt.Printf("%q\n", content)
	for _, c := range calls {
		fmt.Println(c.Name, c.Arguments)
	}
	// Output:
	// ""
	// get_weather {"city":"Paris"}
	// get_time {}
}
