package toolcall

// The output of a request whose tool_choice is "required" or names a
// function: guided decoding held the engine to JSON (a schema derived
// from the tools, as vLLM and the reference system derive it), so the
// output is parsed as that JSON whatever the model's own format. Text
// that is not that JSON is content. Spaces after the JSON are dropped.
var (
	requiredShape = &jsonShape{list: true, trailing: true}
	requiredP     = &Parser{name: "tool_choice_required", newScan: func(tools toolSet) scanner {
		return newMarked(tools, requiredShape.region)
	}}
)

// Required returns the parser of a tool_choice "required" output: a
// JSON array of {"name": ..., "parameters": {...}} objects ("arguments"
// is taken for "parameters"; missing or null parameters are "{}"). Its
// calls stream as the others do (see the package doc).
func Required() *Parser { return requiredP }

// Named returns the parser of the output of a tool_choice that names
// function name: the JSON object of its arguments, one call.
func Named(name string) *Parser {
	sh := &jsonShape{argsOf: name, trailing: true}
	return &Parser{name: "tool_choice_function", newScan: func(tools toolSet) scanner {
		return newMarked(tools, sh.region)
	}}
}
