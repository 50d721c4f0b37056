package jsonschema

import (
	"fmt"
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
	e.Leaves(func(l *Error) { parts = append(parts, "at /"+strings.Join(l.Loc, "/")+": "+l.Msg) })
	return strings.Join(parts, "; ")
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

// Validate checks v, decoded as Unmarshal does (or of Go's plain
// numbers), against s. step is called for every subschema evaluated,
// with the depth of the value it is evaluated at; it may panic to stop
// the check, which leaves nothing behind. The error is an *Error.
func (s *Schema) Validate(v any, step func(depth int)) error {
	st := &state{step: step}
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
	step  func(int)
	scope []*resource // the dynamic scope, outermost first
	nest  int         // how many evaluations are open
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

func (e *evaluated) merge(o evaluated) {
	for k := range o.props {
		if e.props == nil {
			e.props = map[string]bool{}
		}
		e.props[k] = true
	}
	e.allProps = e.allProps || o.allProps
	e.items = max(e.items, o.items)
	e.allItems = e.allItems || o.allItems
	for i := range o.indices {
		if e.indices == nil {
			e.indices = map[int]bool{}
		}
		e.indices[i] = true
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
	st.step(len(loc))
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
		ev.merge(e)
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
	errs = append(errs, n.checkValue(v, loc)...)
	errs = append(errs, st.combine(n, v, loc, want, &ev)...)
	switch x := v.(type) {
	case map[string]any:
		errs = append(errs, st.object(n, x, loc, &ev)...)
	case []any:
		errs = append(errs, st.array(n, x, loc, &ev)...)
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
func (n *node) checkValue(v any, loc []string) []*Error {
	var errs []*Error
	if len(n.types) > 0 && !slices.ContainsFunc(n.types, func(t string) bool { return isType(v, t) }) {
		errs = append(errs, at(loc, "got %s, want %s", typeOf(v), strings.Join(n.types, " or ")))
	}
	if n.enum != nil && !slices.ContainsFunc(n.enum, func(e any) bool { return equal(e, v) }) {
		errs = append(errs, at(loc, "%s", enumMessage(n.enum)))
	}
	if n.constant != nil && !equal(*n.constant, v) {
		if isPrimitive(*n.constant) {
			errs = append(errs, at(loc, "value must be %s", display(*n.constant)))
		} else {
			errs = append(errs, at(loc, "'const' failed"))
		}
	}
	if r, ok := ratOf(v); ok {
		errs = append(errs, n.checkNumber(r, v, loc)...)
	}
	if s, ok := v.(string); ok {
		if c := utf8.RuneCountInString(s); n.minLength >= 0 && c < n.minLength {
			errs = append(errs, at(loc, "minLength: got %d, want %d", c, n.minLength))
		} else if n.maxLength >= 0 && c > n.maxLength {
			errs = append(errs, at(loc, "maxLength: got %d, want %d", c, n.maxLength))
		}
		if n.pattern != nil && !n.pattern.MatchString(s) {
			errs = append(errs, at(loc, "%s does not match pattern %s", quote(s), quote(n.patternText)))
		}
	}
	return errs
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
			ev.merge(e)
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
			ev.merge(e)
			next = n.thenSchema
		}
		if next != nil {
			e, es := st.validate(next, v, loc, want)
			errs = append(errs, es...)
			if len(es) == 0 {
				ev.merge(e)
			}
		}
	}
	return errs
}
