package toolcall

// Pythonic calls (Llama 3.2, Llama 4, ToolACE, ...): a Python list of calls
// with keyword arguments written as Python literals:
//
//	[get_weather(city="Paris", days=3), get_time(tz='CET', exact=True)]
//
// Llama 4 may wrap the list in <|python_start|> and <|python_end|>; with
// the wrapper the list is a call wherever it appears. Without it, only an
// output that starts with such a list (after spaces) holds calls, and only
// when every name is a declared function. Strings, numbers, True, False,
// None, lists, tuples and dicts become their JSON counterparts. A call
// is passed on whole once the list is complete: Python literals become
// JSON only then.
const (
	pyStart = "<|python_start|>"
	pyEnd   = "<|python_end|>"
)

func pythonicWrapped(buf string, atEnd bool, cx *scanCtx) (int, []Call, bool) {
	body := buf[len(pyStart):]
	n := len(buf)
	if i := cx.index(buf, len(pyStart), pyEnd); i >= 0 {
		body, n = buf[len(pyStart):i], i+len(pyEnd)
	} else if !atEnd {
		return 0, nil, false
	}
	calls, ok := parsePythonCalls(body)
	return n, calls, ok
}

// pythonicLead takes a pythonic list at the start of the output.
func pythonicLead(buf string, atEnd bool, cx *scanCtx) (int, []Call, bool, leadVerdict) {
	i := skipSpace(buf, 0)
	switch st := listOfCallsStart(buf[i:]); {
	case st == scanMore && !atEnd:
		return 0, nil, false, leadMore
	case st != scanDone:
		return 0, nil, false, leadNone
	}
	n := cx.valueEnd(buf, i, `"'`)
	if n == 0 {
		if atEnd {
			return len(buf), nil, false, leadFound
		}
		return 0, nil, false, leadMore
	}
	calls, ok := parsePythonCalls(buf[i : i+n])
	if !ok || !cx.tools.allows(calls) {
		return i + n, nil, false, leadFound
	}
	return i + n, calls, true, leadFound
}

// listOfCallsStart reports whether s starts with "[name(" (spaces allowed),
// does not, or is too short to tell.
func listOfCallsStart(s string) scanStatus {
	if s == "" {
		return scanMore
	}
	if s[0] != '[' {
		return scanBad
	}
	i := skipSpace(s, 1)
	if i == len(s) {
		return scanMore
	}
	if !isIdentStart(s[i]) {
		return scanBad
	}
	for i < len(s) && isIdentByte(s[i]) {
		i++
	}
	i = skipSpace(s, i)
	switch {
	case i == len(s):
		return scanMore
	case s[i] == '(':
		return scanDone
	}
	return scanBad
}

func newPythonic(tools toolSet) scanner {
	return newMarked(tools, wholeLead(pythonicLead), rule{open: pyStart, region: whole(pythonicWrapped)})
}
