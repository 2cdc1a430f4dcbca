package template

import (
	"fmt"
	"strconv"
	"strings"
)

// filterFunc implements one filter: v|name(args..., kw...).
type filterFunc func(e *evaluator, v any, args []any, kw *OrderedMap) (any, error)

// filter is one entry of the filter table.
type filter struct {
	fn filterFunc
	// undef lets an undefined input reach apply. Without it, applying the
	// filter to an undefined value raises ErrUndefined.
	undef bool
}

// Whether a filter sees undefined inputs (the filter.undef field).
const (
	raisesOnUndef = false
	seesUndef     = true
)

// filters maps every filter name, aliases included, to its implementation;
// adding a filter is adding an entry. The parser looks names up here, and
// map at render time. It is filled in init because map applies filters
// through this table, which a package-level initializer would turn into an
// initialization cycle; so no package-level variable may compile a template.
var filters map[string]filter

func init() {
	filters = map[string]filter{
		"default": {filterDefault, seesUndef},
		"d":       {filterDefault, seesUndef},

		// strings (filters_string.go)
		"safe":        {filterSafe, seesUndef},
		"e":           {filterEscape, raisesOnUndef},
		"escape":      {filterEscape, raisesOnUndef},
		"forceescape": {filterEscape, raisesOnUndef},
		"string":      {filterString, seesUndef},
		"upper":       {filterUpper, raisesOnUndef},
		"lower":       {filterLower, raisesOnUndef},
		"title":       {filterTitle, raisesOnUndef},
		"capitalize":  {filterCapitalize, raisesOnUndef},
		"trim":        {filterTrim, raisesOnUndef},
		"replace":     {filterReplace, raisesOnUndef},
		"indent":      {filterIndent, raisesOnUndef},
		"wordcount":   {filterWordcount, raisesOnUndef},
		"tojson":      {filterToJSON, seesUndef},

		// sequences (filters_seq.go)
		"length":  {filterLength, seesUndef},
		"count":   {filterLength, seesUndef},
		"list":    {filterList, seesUndef},
		"first":   {filterFirst, seesUndef},
		"last":    {filterLast, seesUndef},
		"join":    {filterJoin, seesUndef},
		"reverse": {filterReverse, seesUndef},
		"batch":   {filterBatch, raisesOnUndef},
		"sum":     {filterSum, raisesOnUndef},
		"items":   {filterItems, seesUndef},

		// ordering (filters_sort.go)
		"sort":     {filterSort, seesUndef},
		"dictsort": {filterDictSort, raisesOnUndef},
		"unique":   {filterUnique, seesUndef},
		"min":      {filterMin, raisesOnUndef},
		"max":      {filterMax, raisesOnUndef},

		// higher-order (filters_select.go)
		"map":        {filterMap, seesUndef},
		"select":     {selectFilter("select", false, true), seesUndef},
		"reject":     {selectFilter("reject", false, false), seesUndef},
		"selectattr": {selectFilter("selectattr", true, true), seesUndef},
		"rejectattr": {selectFilter("rejectattr", true, false), seesUndef},

		// numbers (filters_num.go)
		"int":   {filterInt, raisesOnUndef},
		"float": {filterFloat, raisesOnUndef},
		"abs":   {filterAbs, raisesOnUndef},
		"round": {filterRound, raisesOnUndef},
	}
}

// newFilterExpr returns the filter expression obj|name with its table
// entry looked up once, when the template is parsed. An unknown name is
// not an error until the expression is evaluated.
func newFilterExpr(obj expr, name string) *filterExpr {
	return &filterExpr{obj: obj, name: name, fn: filters[name]}
}

// applyFilter applies the filter called name to v.
func (e *evaluator) applyFilter(name string, v any, args []any, kw *OrderedMap) (any, error) {
	return e.runFilter(filters[name], name, v, args, kw)
}

// runFilter applies f, the table entry of the filter called name (zero if
// there is none), to v. An undefined v raises unless the filter accepts
// undefined inputs; that check comes first, so an unknown filter applied
// to an undefined value reports the undefined value.
func (e *evaluator) runFilter(f filter, name string, v any, args []any, kw *OrderedMap) (any, error) {
	if u, isU := v.(undefined); isU && !f.undef {
		return nil, undefErr(u)
	}
	if f.fn == nil {
		return nil, fmt.Errorf("template: no filter named '%s'", name)
	}
	return f.fn(e, v, args, kw)
}

// filterDefault is default(default_value="", boolean=False): v, or the
// default when v is undefined (or, with boolean, false).
func filterDefault(_ *evaluator, v any, args []any, kw *OrderedMap) (any, error) {
	def := kwOr(args, kw, 0, "default_value", "")
	boolean := truthy(kwOr(args, kw, 1, "boolean", false))
	if isUndef(v) || (boolean && !truthy(v)) {
		return def, nil
	}
	return v, nil
}

// kwOr returns keyword name, else positional i, else def.
func kwOr(args []any, kw *OrderedMap, i int, name string, def any) any {
	if v, ok := kw.Get(name); ok {
		return v
	}
	if i >= 0 && i < len(args) {
		return args[i]
	}
	return def
}

// getPath resolves "a.b.0" like Jinja2's make_attrgetter.
func getPath(v any, path string) (any, error) {
	for _, part := range strings.Split(path, ".") {
		var err error
		if n, perr := strconv.ParseInt(part, 10, 64); perr == nil {
			v, err = getItem(v, n)
		} else {
			v, err = getItem(v, part)
		}
		if err != nil {
			return undefined{}, err
		}
	}
	return v, nil
}

// attrOf returns getPath(v, attr) when attr is set (not nil), else v; a
// failed lookup yields undefined, as in jinja2.
func attrOf(v, attr any) any {
	if attr == nil {
		return v
	}
	x, _ := getPath(v, str(attr))
	return x
}
