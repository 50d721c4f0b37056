package jsonschema

import (
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// object applies the keywords about objects.
func (st *state) object(n *node, obj map[string]any, loc []string, ev *evaluated) []*Error {
	var errs []*Error
	var missing []string
	for _, r := range n.required {
		if _, ok := obj[r]; !ok {
			missing = append(missing, r)
		}
	}
	switch len(missing) {
	case 0:
	case 1:
		errs = append(errs, at(loc, "missing property %s", quote(missing[0])))
	default:
		errs = append(errs, at(loc, "missing properties %s", joinQuoted(missing)))
	}
	if n.minProperties >= 0 && len(obj) < n.minProperties {
		errs = append(errs, at(loc, "minProperties: got %d, want %d", len(obj), n.minProperties))
	}
	if n.maxProperties >= 0 && len(obj) > n.maxProperties {
		errs = append(errs, at(loc, "maxProperties: got %d, want %d", len(obj), n.maxProperties))
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if deps, ok := n.dependentRequired[k]; ok {
			var lack []string
			for _, d := range deps {
				if _, ok := obj[d]; !ok {
					lack = append(lack, d)
				}
			}
			if len(lack) > 0 {
				errs = append(errs, at(loc, "properties %s required, if %s exists", joinQuoted(lack), quote(k)))
			}
		}
		if s, ok := n.dependentSchemas[k]; ok {
			e, es := st.validate(s, obj, loc, true)
			errs = append(errs, es...)
			if len(es) == 0 {
				ev.merge(e)
			}
		}
	}
	errs = append(errs, st.properties(n, obj, keys, loc, ev)...)
	if n.unevaluatedProperties != nil {
		for _, k := range keys {
			if ev.allProps || ev.props[k] {
				continue
			}
			_, es := st.validate(n.unevaluatedProperties, obj[k], child(loc, k), false)
			errs = append(errs, es...)
		}
		ev.allProps = true
	}
	return errs
}

// properties applies properties, patternProperties, additionalProperties
// and propertyNames to obj, whose keys are sorted.
func (st *state) properties(n *node, obj map[string]any, keys []string, loc []string, ev *evaluated) []*Error {
	var errs []*Error
	var extra []string
	for _, k := range keys {
		matched := false
		if s, ok := n.properties[k]; ok {
			matched = true
			ev.prop(k)
			_, es := st.validate(s, obj[k], child(loc, k), false)
			errs = append(errs, es...)
		}
		for _, pp := range n.patternProperties {
			if pp.re.MatchString(k) {
				matched = true
				ev.prop(k)
				_, es := st.validate(pp.n, obj[k], child(loc, k), false)
				errs = append(errs, es...)
			}
		}
		if !matched && n.additionalProperties != nil {
			ev.prop(k)
			if b := n.additionalProperties.boolean; b != nil && !*b {
				extra = append(extra, k)
				continue
			}
			_, es := st.validate(n.additionalProperties, obj[k], child(loc, k), false)
			errs = append(errs, es...)
		}
		if n.propertyNames != nil {
			if _, es := st.validate(n.propertyNames, k, loc, false); len(es) > 0 {
				errs = append(errs, &Error{Loc: loc, Msg: fmt.Sprintf("invalid propertyName %s", quote(k)), Causes: es})
			}
		}
	}
	if len(extra) > 0 {
		errs = append(errs, at(loc, "additional properties %s not allowed", joinQuoted(extra)))
	}
	return errs
}

// array applies the keywords about arrays.
func (st *state) array(n *node, arr []any, loc []string, ev *evaluated) []*Error {
	var errs []*Error
	if n.minItems >= 0 && len(arr) < n.minItems {
		errs = append(errs, at(loc, "minItems: got %d, want %d", len(arr), n.minItems))
	}
	if n.maxItems >= 0 && len(arr) > n.maxItems {
		errs = append(errs, at(loc, "maxItems: got %d, want %d", len(arr), n.maxItems))
	}
	if n.uniqueItems {
	outer:
		for i := range arr {
			for j := range i {
				if equal(arr[j], arr[i]) {
					errs = append(errs, at(loc, "items at %d and %d are equal", j, i))
					break outer
				}
			}
		}
	}
	for i, s := range n.prefixItems {
		if i >= len(arr) {
			break
		}
		_, es := st.validate(s, arr[i], child(loc, strconv.Itoa(i)), false)
		errs = append(errs, es...)
		ev.items = max(ev.items, i+1)
	}
	if n.items != nil && len(arr) > len(n.prefixItems) {
		if b := n.items.boolean; b != nil && !*b {
			errs = append(errs, at(loc, "last %d additionalItem(s) not allowed", len(arr)-len(n.prefixItems)))
		} else {
			for i := len(n.prefixItems); i < len(arr); i++ {
				_, es := st.validate(n.items, arr[i], child(loc, strconv.Itoa(i)), false)
				errs = append(errs, es...)
			}
		}
		ev.allItems = true
	}
	if n.contains != nil {
		errs = append(errs, st.contains(n, arr, loc, ev)...)
	}
	if n.unevaluatedItems != nil {
		for i := range arr {
			if ev.allItems || i < ev.items || ev.indices[i] {
				continue
			}
			_, es := st.validate(n.unevaluatedItems, arr[i], child(loc, strconv.Itoa(i)), false)
			errs = append(errs, es...)
		}
		ev.allItems = true
	}
	return errs
}

func (st *state) contains(n *node, arr []any, loc []string, ev *evaluated) []*Error {
	var matched []int
	for i, item := range arr {
		if _, es := st.validate(n.contains, item, child(loc, strconv.Itoa(i)), false); len(es) == 0 {
			matched = append(matched, i)
			if n.draft >= Draft2020 {
				if ev.indices == nil {
					ev.indices = map[int]bool{}
				}
				ev.indices[i] = true
			}
		}
	}
	least := 1
	if n.minContains >= 0 {
		least = n.minContains
	}
	switch {
	case len(matched) < least && least == 1 && n.minContains < 0:
		return []*Error{at(loc, "no items match contains schema")}
	case len(matched) < least && len(matched) == 0:
		return []*Error{at(loc, "min %d items required to match contains schema, but none matched", least)}
	case len(matched) < least:
		return []*Error{at(loc, "min %d items required to match contains schema, but matched %d items at %s", least, len(matched), ints(matched))}
	case n.maxContains >= 0 && len(matched) > n.maxContains:
		return []*Error{at(loc, "max %d items required to match contains schema, but matched %d items at %s", n.maxContains, len(matched), ints(matched))}
	}
	return nil
}

func ints(l []int) string {
	s := fmt.Sprint(l)
	return s[1 : len(s)-1]
}

// checkNumber applies the keywords about numbers to r, which is v.
func (n *node) checkNumber(r *big.Rat, v any, loc []string) []*Error {
	var errs []*Error
	got := numberText(v)
	if n.multipleOf != nil {
		if q := new(big.Rat).Quo(r, n.multipleOf.r); !q.IsInt() {
			errs = append(errs, at(loc, "multipleOf: got %s, want %s", got, n.multipleOf.text))
		}
	}
	if n.minimum != nil && r.Cmp(n.minimum.r) < 0 {
		errs = append(errs, at(loc, "minimum: got %s, want %s", got, n.minimum.text))
	}
	if n.maximum != nil && r.Cmp(n.maximum.r) > 0 {
		errs = append(errs, at(loc, "maximum: got %s, want %s", got, n.maximum.text))
	}
	if n.exclusiveMinimum != nil && r.Cmp(n.exclusiveMinimum.r) <= 0 {
		errs = append(errs, at(loc, "exclusiveMinimum: got %s, want %s", got, n.exclusiveMinimum.text))
	}
	if n.exclusiveMaximum != nil && r.Cmp(n.exclusiveMaximum.r) >= 0 {
		errs = append(errs, at(loc, "exclusiveMaximum: got %s, want %s", got, n.exclusiveMaximum.text))
	}
	return errs
}

func numberText(v any) string { return fmt.Sprint(v) }

// isType reports whether v is of the JSON type t; an integer is a
// number with no fraction.
func isType(v any, t string) bool {
	switch t {
	case "integer":
		r, ok := ratOf(v)
		return ok && r.IsInt()
	case "number":
		_, ok := ratOf(v)
		return ok
	}
	return typeOf(v) == t
}

// equal reports whether a and b are the same JSON value; numbers are
// equal by value.
func equal(a, b any) bool {
	if ra, ok := ratOf(a); ok {
		rb, ok := ratOf(b)
		return ok && ra.Cmp(rb) == 0
	}
	switch x := a.(type) {
	case []any:
		y, ok := b.([]any)
		return ok && slices.EqualFunc(x, y, equal)
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !equal(xv, yv) {
				return false
			}
		}
		return true
	}
	switch a.(type) {
	case string, bool, nil:
		return a == b
	}
	return false // not a JSON value: equal to nothing, and never compared with ==, which may panic
}

func isPrimitive(v any) bool {
	switch v.(type) {
	case []any, map[string]any:
		return false
	}
	return true
}

func enumMessage(enum []any) string {
	if !slices.ContainsFunc(enum, func(e any) bool { return !isPrimitive(e) }) {
		if len(enum) == 1 {
			return "value must be " + display(enum[0])
		}
		want := make([]string, len(enum))
		for i, e := range enum {
			want[i] = display(e)
		}
		return "value must be one of " + strings.Join(want, ", ")
	}
	return "'enum' failed"
}

func display(v any) string {
	switch v := v.(type) {
	case string:
		return quote(v)
	case nil:
		return "null"
	}
	return fmt.Sprint(v)
}

func quote(s string) string {
	s = strconv.Quote(s)
	s = strings.ReplaceAll(s, `\"`, `"`)
	s = strings.ReplaceAll(s, `'`, `\'`)
	return "'" + s[1:len(s)-1] + "'"
}

func joinQuoted(l []string) string {
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = quote(s)
	}
	return strings.Join(q, ", ")
}
