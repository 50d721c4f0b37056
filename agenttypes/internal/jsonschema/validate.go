package jsonschema

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// An Error is why a value does not match a schema: at the value's
// location Loc (its path of keys and indices), Msg; or, where a keyword
// combines subschemas (anyOf, ...), the Causes from each.
type Error struct {
	Loc    []string
	Msg    string
	Causes []*Error
}

// Error lists the leaf failures as "at /loc: msg".
func (e *Error) Error() string {
	var parts []string
	e.Leaves(func(l *Error) { parts = append(parts, "at "+l.Location()+": "+l.Msg) })
	return strings.Join(parts, "; ")
}

// Location is Loc as a path, "/a/0", each part of it cut short.
func (e *Error) Location() string {
	var b strings.Builder
	for _, part := range e.Loc {
		b.WriteString("/" + cut(part))
	}
	if b.Len() == 0 {
		return "/"
	}
	return b.String()
}

// Leaves calls f with each failure that has no causes, in order.
func (e *Error) Leaves(f func(*Error)) {
	if len(e.Causes) == 0 {
		f(e)
		return
	}
	for _, c := range e.Causes {
		c.Leaves(f)
	}
}

// A Meter is told of the work a validation does, before it does it, and
// may panic to stop the validation, which leaves nothing behind. A unit
// of work is about what evaluating one subschema costs.
type Meter interface {
	// Step is one subschema evaluated at the given depth of the value.
	Step(depth int)
	// Work is work within a step whose cost grows with the size of the
	// value, in units: matching a pattern, comparing values, reading long
	// strings and numbers, going through an object's properties.
	Work(units int)
}

// What work within a step costs, in units of a step's cost (about 100 ns):
// reading or writing bytes of the value; matching a pattern, whose cost
// is at worst the text's length times the size of the pattern's program,
// each pair taking some 30 ns in the slowest case.
const (
	bytesPerUnit        = 64
	patternStepsPerUnit = 4
)

// Validate checks v, decoded as Unmarshal does (or of Go's plain
// numbers), against s, reporting its work to m. The error is an *Error.
func (s *Schema) Validate(v any, m Meter) error {
	st := &state{meter: m}
	_, errs := st.validate(s.root, v, nil, false)
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return &Error{Msg: "validation failed", Causes: errs}
}

type state struct {
	meter   Meter
	scope   []*resource // the dynamic scope, outermost first
	nest    int         // how many evaluations are open
	key     []byte      // room for the key of a value (see appendKey)
	numbers map[string]parsedNumber
}

// charge reports units of work to the meter, before they are done.
func (st *state) charge(units int) {
	if units > 0 {
		st.meter.Work(units)
	}
}

// A parsedNumber is a long number's text read once per validation.
type parsedNumber struct {
	d     decimal
	isNum bool
	err   error
}

// longNumber is the length of a number's text past which it is read once
// per validation and remembered, and its reading charged: shorter ones
// take less time to read than to look up.
const longNumber = 64

// decimal is v as a number (see decimalOf).
func (st *state) decimal(v any) (decimal, bool, error) {
	text, ok := v.(json.Number)
	if !ok || len(text) <= longNumber {
		return decimalOf(v)
	}
	if p, ok := st.numbers[string(text)]; ok {
		return p.d, p.isNum, p.err
	}
	st.charge(len(text) / bytesPerUnit)
	d, isNum, err := decimalOf(v)
	if st.numbers == nil {
		st.numbers = map[string]parsedNumber{}
	}
	st.numbers[string(text)] = parsedNumber{d, isNum, err}
	return d, isNum, err
}

// maxNesting bounds how deeply evaluations nest: a dynamic reference can
// lead back to where it is without going into the value, which no check
// of the schema alone can rule out.
const maxNesting = 10_000

// evaluated is what a valid evaluation covered of an object or array,
// for unevaluatedProperties and unevaluatedItems.
type evaluated struct {
	props    map[string]bool
	allProps bool
	items    int // items [0, items) were evaluated
	allItems bool
	indices  map[int]bool
}

// merge adds what o covered to e. A map of o's is taken over rather than
// copied when e has none: o is what an evaluation below returned, used
// once. So what a long chain of in-place subschemas covered is passed up
// it without being copied at every level; a copy is charged.
func (st *state) merge(e *evaluated, o evaluated) {
	if e.props == nil {
		e.props = o.props
	} else if len(o.props) > 0 {
		st.charge(len(o.props) / 8)
		maps.Copy(e.props, o.props)
	}
	e.allProps = e.allProps || o.allProps
	e.items = max(e.items, o.items)
	e.allItems = e.allItems || o.allItems
	if e.indices == nil {
		e.indices = o.indices
	} else if len(o.indices) > 0 {
		st.charge(len(o.indices) / 8)
		maps.Copy(e.indices, o.indices)
	}
}

func (e *evaluated) prop(k string) {
	if e.props == nil {
		e.props = map[string]bool{}
	}
	e.props[k] = true
}

func at(loc []string, msg string, args ...any) *Error {
	return &Error{Loc: loc, Msg: fmt.Sprintf(msg, args...)}
}

func child(loc []string, k string) []string {
	return append(slices.Clip(loc), k)
}

// validate checks v at loc against n. want asks for what the evaluation
// covered; unevaluated* of n asks for it of n's in-place applicators.
func (st *state) validate(n *node, v any, loc []string, want bool) (evaluated, []*Error) {
	st.meter.Step(len(loc))
	var ev evaluated
	if st.nest++; st.nest > maxNesting {
		return ev, []*Error{at(loc, "the schema and the value nest too deeply to check (over %d levels)", maxNesting)}
	}
	defer func() { st.nest-- }()
	if n.boolean != nil {
		if !*n.boolean {
			return ev, []*Error{at(loc, "false schema")}
		}
		return ev, nil
	}
	if top := len(st.scope); top == 0 || st.scope[top-1] != n.resource {
		st.scope = append(st.scope, n.resource)
		defer func() { st.scope = st.scope[:top] }()
	}
	want = want || n.unevaluatedProperties != nil || n.unevaluatedItems != nil
	var errs []*Error
	inPlace := func(s *node) bool {
		e, es := st.validate(s, v, loc, want)
		if len(es) > 0 {
			errs = append(errs, es...)
			return false
		}
		st.merge(&ev, e)
		return true
	}
	if n.ref != nil {
		inPlace(n.ref)
	}
	if n.dynamicRef != nil {
		inPlace(st.dynamicTarget(n))
	}
	if n.recursiveRef != nil {
		inPlace(st.recursiveTarget(n.recursiveRef))
	}
	errs = append(errs, st.checkValue(n, v, loc)...)
	errs = append(errs, st.combine(n, v, loc, want, &ev)...)
	switch x := v.(type) {
	case map[string]any:
		errs = append(errs, st.object(n, x, loc, want, &ev)...)
	case []any:
		errs = append(errs, st.array(n, x, loc, want, &ev)...)
	}
	return ev, errs
}

// dynamicTarget is where n's $dynamicRef leads: the outermost resource
// in the dynamic scope that declares the anchor, else its static target.
func (st *state) dynamicTarget(n *node) *node {
	if n.dynamicName == "" {
		return n.dynamicRef
	}
	for _, r := range st.scope {
		if t, ok := r.dynamic[n.dynamicName]; ok {
			return t
		}
	}
	return n.dynamicRef
}

// recursiveTarget is where a $recursiveRef to target leads.
func (st *state) recursiveTarget(target *node) *node {
	if !target.resource.recursive || target.resource.root != target.ptr {
		return target
	}
	for _, r := range st.scope {
		if r.recursive {
			if t := r.rootNode; t != nil {
				return t
			}
		}
	}
	return target
}

// checkValue checks the keywords about v itself.
func (st *state) checkValue(n *node, v any, loc []string) []*Error {
	var num decimal
	isNum := false
	if n.numberKind || n.numberValue {
		var err error
		if num, isNum, err = st.decimal(v); err != nil && n.numberValue {
			return []*Error{at(loc, "the number %s: %v", numberText(v), err)}
		}
	}
	var errs []*Error
	if len(n.types) > 0 && !slices.ContainsFunc(n.types, func(t string) bool { return isType(v, t, num, isNum) }) {
		errs = append(errs, at(loc, "got %s, want %s", typeOf(v), strings.Join(n.types, " or ")))
	}
	errs = append(errs, st.checkEqual(n, v, loc)...)
	if isNum && n.numberValue {
		errs = append(errs, st.checkNumber(n, num, v, loc)...)
	}
	if s, ok := v.(string); ok {
		if n.minLength >= 0 || n.maxLength >= 0 {
			st.charge(len(s) / bytesPerUnit)
			if c := utf8.RuneCountInString(s); n.minLength >= 0 && c < n.minLength {
				errs = append(errs, at(loc, "minLength: got %d, want %d", c, n.minLength))
			} else if n.maxLength >= 0 && c > n.maxLength {
				errs = append(errs, at(loc, "maxLength: got %d, want %d", c, n.maxLength))
			}
		}
		if n.pattern != nil && !st.match(n.pattern, s) {
			errs = append(errs, at(loc, "%s does not match pattern %s", quote(s), quote(n.pattern.text)))
		}
	}
	return errs
}

// checkEqual applies enum and const, by looking v's key up among theirs:
// its key is written no further than the longest of theirs, since a
// longer one matches none.
func (st *state) checkEqual(n *node, v any, loc []string) []*Error {
	if n.enum == nil && n.constant == nil {
		return nil
	}
	key, ok := appendKey(st.key[:0], v, n.keyLimit)
	st.key = key
	st.charge(len(key) / bytesPerUnit)
	var errs []*Error
	if n.enum != nil && !(ok && n.enum.keys[string(key)]) {
		errs = append(errs, at(loc, "%s", n.enum.msg))
	}
	if n.constant != nil && !(ok && n.constant.key == string(key)) {
		errs = append(errs, at(loc, "%s", n.constant.msg))
	}
	return errs
}

// match reports whether the pattern p matches s, after charging for it.
func (st *state) match(p *pattern, s string) bool {
	cost := math.MaxInt
	if len(s) < math.MaxInt/p.insts {
		cost = len(s) * p.insts / patternStepsPerUnit
	}
	st.charge(cost)
	return p.re.MatchString(s)
}

// combine applies allOf, anyOf, oneOf, not and if/then/else.
func (st *state) combine(n *node, v any, loc []string, want bool, ev *evaluated) []*Error {
	var errs []*Error
	group := func(subs []*node, stopAtFirst bool) (matched []int, causes []*Error) {
		for i, s := range subs {
			e, es := st.validate(s, v, loc, want)
			if len(es) > 0 {
				causes = append(causes, es...)
				continue
			}
			st.merge(ev, e)
			matched = append(matched, i)
			if stopAtFirst && !want {
				break
			}
		}
		return matched, causes
	}
	if len(n.allOf) > 0 {
		if _, causes := group(n.allOf, false); len(causes) > 0 {
			errs = append(errs, &Error{Loc: loc, Msg: "'allOf' failed", Causes: causes})
		}
	}
	if len(n.anyOf) > 0 {
		if matched, causes := group(n.anyOf, true); len(matched) == 0 {
			errs = append(errs, &Error{Loc: loc, Msg: "'anyOf' failed", Causes: causes})
		}
	}
	if len(n.oneOf) > 0 {
		matched, causes := group(n.oneOf, false)
		switch {
		case len(matched) == 0:
			errs = append(errs, &Error{Loc: loc, Msg: "'oneOf' failed, none matched", Causes: causes})
		case len(matched) > 1:
			errs = append(errs, at(loc, "'oneOf' failed, subschemas %d, %d matched", matched[0], matched[1]))
		}
	}
	if n.not != nil {
		if _, es := st.validate(n.not, v, loc, false); len(es) == 0 {
			errs = append(errs, at(loc, "'not' failed"))
		}
	}
	if n.ifSchema != nil {
		e, es := st.validate(n.ifSchema, v, loc, want)
		next := n.elseSch
		if len(es) == 0 {
			st.merge(ev, e)
			next = n.thenSchema
		}
		if next != nil {
			e, es := st.validate(next, v, loc, want)
			errs = append(errs, es...)
			if len(es) == 0 {
				st.merge(ev, e)
			}
		}
	}
	return errs
}
