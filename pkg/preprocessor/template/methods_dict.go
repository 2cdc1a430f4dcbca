package template

// dictMethods are the dict methods; a dict's methods shadow its keys in
// attribute access.
var dictMethods = map[string]method[*OrderedMap]{
	"get":    dictGet,
	"items":  dictItemsMethod,
	"keys":   dictKeys,
	"values": dictValues,
}

// dictGet is dict.get(key, default=None).
func dictGet(m *OrderedMap, args []any, kw *OrderedMap) (any, error) {
	k := str(kwOr(args, kw, 0, "key", ""))
	if v, ok := m.m[k]; ok {
		return v, nil
	}
	return kwOr(args, kw, 1, "default", nil), nil
}

func dictItemsMethod(m *OrderedMap, _ []any, _ *OrderedMap) (any, error) {
	return dictItems(m), nil
}

func dictKeys(m *OrderedMap, _ []any, _ *OrderedMap) (any, error) {
	out := make([]any, len(m.keys))
	for i, k := range m.keys {
		out[i] = k
	}
	return out, nil
}

func dictValues(m *OrderedMap, _ []any, _ *OrderedMap) (any, error) {
	out := make([]any, len(m.keys))
	for i, k := range m.keys {
		out[i] = m.m[k]
	}
	return out, nil
}

// dictItems returns m's (key, value) pairs in insertion order.
func dictItems(m *OrderedMap) []any {
	out := make([]any, len(m.keys))
	for i, k := range m.keys {
		out[i] = []any{k, m.m[k]}
	}
	return out
}
