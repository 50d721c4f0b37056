package jsonschema

import (
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"strconv"
	"strings"
)

// object applies the keywords about objects; want asks it to record the
// properties it evaluated in ev.
func (st *state) object(n *node, obj map[string]any, loc []string, want bool, ev *evaluated) []*Error {
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
	if !n.looksAtEachProperty() {
		return errs
	}
	// Sorting the keys, for messages in a stable order, is the part that
	// grows fastest with the object.
	st.charge(len(obj) * bits.Len(uint(len(obj))) / 8)
	keys := slices.Sorted(maps.Keys(obj))
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
			e, es := st.validate(s, obj, loc, want)
			errs = append(errs, es...)
			if len(es) == 0 {
				st.merge(ev, e)
			}
		}
	}
	errs = append(errs, st.properties(n, obj, keys, loc, want, ev)...)
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

// looksAtEachProperty reports whether n has keywords that go through an
// object's properties one by one.
func (n *node) looksAtEachProperty() bool {
	return n.dependentRequired != nil || n.dependentSchemas != nil || n.properties != nil || n.patternProperties != nil ||
		n.additionalProperties != nil || n.propertyNames != nil || n.unevaluatedProperties != nil
}

// properties applies properties, patternProperties, additionalProperties
// and propertyNames to obj, whose keys are sorted.
func (st *state) properties(n *node, obj map[string]any, keys []string, loc []string, want bool, ev *evaluated) []*Error {
	var errs []*Error
	var extra []string
	evaluated := func(k string) {
		if want {
			ev.prop(k)
		}
	}
	for _, k := range keys {
		matched := false
		if s, ok := n.properties[k]; ok {
			matched = true
			evaluated(k)
			_, es := st.validate(s, obj[k], child(loc, k), false)
			errs = append(errs, es...)
		}
		for _, pp := range n.patternProperties {
			if st.match(pp.p, k) {
				matched = true
				evaluated(k)
				_, es := st.validate(pp.n, obj[k], child(loc, k), false)
				errs = append(errs, es...)
			}
		}
		if !matched && n.additionalProperties != nil {
			evaluated(k)
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

// array applies the keywords about arrays; want asks it to record the
// items it evaluated in ev.
func (st *state) array(n *node, arr []any, loc []string, want bool, ev *evaluated) []*Error {
	var errs []*Error
	if n.minItems >= 0 && len(arr) < n.minItems {
		errs = append(errs, at(loc, "minItems: got %d, want %d", len(arr), n.minItems))
	}
	if n.maxItems >= 0 && len(arr) > n.maxItems {
		errs = append(errs, at(loc, "maxItems: got %d, want %d", len(arr), n.maxItems))
	}
	if n.uniqueItems {
		errs = append(errs, st.uniqueItems(arr, loc)...)
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
		errs = append(errs, st.contains(n, arr, loc, want, ev)...)
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

// uniqueItems finds the first item equal to one before it, by the items'
// keys (see appendKey): in time linear in the array's size.
func (st *state) uniqueItems(arr []any, loc []string) []*Error {
	if len(arr) < 2 {
		return nil
	}
	seen := make(map[string]int, len(arr))
	for i, item := range arr {
		key, ok := appendKey(st.key[:0], item, -1)
		st.key = key
		st.charge(1 + len(key)/bytesPerUnit)
		if !ok {
			continue // no JSON value: equal to nothing
		}
		if j, dup := seen[string(key)]; dup {
			return []*Error{at(loc, "items at %d and %d are equal", j, i)}
		}
		seen[string(key)] = i
	}
	return nil
}

func (st *state) contains(n *node, arr []any, loc []string, want bool, ev *evaluated) []*Error {
	var matched []int
	for i, item := range arr {
		if _, es := st.validate(n.contains, item, child(loc, strconv.Itoa(i)), false); len(es) == 0 {
			matched = append(matched, i)
			if n.draft >= Draft2020 && want {
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

// ints lists the first few of l.
func ints(l []int) string {
	s := fmt.Sprint(l[:min(len(l), maxListed)])
	s = s[1 : len(s)-1]
	if len(l) > maxListed {
		s += fmt.Sprintf(" and %d more", len(l)-maxListed)
	}
	return s
}

// checkNumber applies the keywords about numbers to d, which is v.
func (st *state) checkNumber(n *node, d decimal, v any, loc []string) []*Error {
	var errs []*Error
	if n.multipleOf != nil {
		st.charge(len(d.digits) / bytesPerUnit)
		if !d.isMultipleOf(n.multipleOf.d) {
			errs = append(errs, at(loc, "multipleOf: got %s, want %s", numberText(v), n.multipleOf.text))
		}
	}
	for _, bound := range []struct {
		name string
		n    *number
		bad  func(c int) bool
	}{
		{"minimum", n.minimum, func(c int) bool { return c < 0 }},
		{"maximum", n.maximum, func(c int) bool { return c > 0 }},
		{"exclusiveMinimum", n.exclusiveMinimum, func(c int) bool { return c <= 0 }},
		{"exclusiveMaximum", n.exclusiveMaximum, func(c int) bool { return c >= 0 }},
	} {
		if bound.n != nil && bound.bad(d.cmp(bound.n.d)) {
			errs = append(errs, at(loc, "%s: got %s, want %s", bound.name, numberText(v), bound.n.text))
		}
	}
	return errs
}

// numberText is v as messages show it, cut short.
func numberText(v any) string { return cut(fmt.Sprint(v)) }

// isType reports whether v is of the JSON type t; an integer is a
// number with no fraction. d is v's value when isNum.
func isType(v any, t string, d decimal, isNum bool) bool {
	switch t {
	case "integer":
		return isNum && d.isInt()
	case "number":
		return isNum
	}
	return typeOf(v) == t
}

func isPrimitive(v any) bool {
	switch v.(type) {
	case []any, map[string]any:
		return false
	}
	return true
}

// enumMessage says what an enum wants, naming at most maxListed values.
func enumMessage(enum []any) string {
	if slices.ContainsFunc(enum, func(e any) bool { return !isPrimitive(e) }) {
		return "'enum' failed"
	}
	if len(enum) == 1 {
		return "value must be " + display(enum[0])
	}
	want := make([]string, 0, maxListed+1)
	for _, e := range enum[:min(len(enum), maxListed)] {
		want = append(want, display(e))
	}
	if len(enum) > maxListed {
		want = append(want, fmt.Sprintf("or %d more", len(enum)-maxListed))
	}
	return "value must be one of " + strings.Join(want, ", ")
}

func display(v any) string {
	switch v := v.(type) {
	case string:
		return quote(v)
	case nil:
		return "null"
	}
	return numberText(v)
}

// Messages quote at most maxQuoted characters of a value and list at
// most maxListed names: what a model needs to see what is wrong, however
// large the value it sent.
const (
	maxQuoted = 100
	maxListed = 10
)

// cut is s, or its first maxQuoted characters and "…".
func cut(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	n := 0
	for i := range s {
		if n == maxQuoted {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

func quote(s string) string {
	s = strconv.Quote(cut(s))
	s = strings.ReplaceAll(s, `\"`, `"`)
	s = strings.ReplaceAll(s, `'`, `\'`)
	return "'" + s[1:len(s)-1] + "'"
}

func joinQuoted(l []string) string {
	q := make([]string, 0, maxListed+1)
	for _, s := range l[:min(len(l), maxListed)] {
		q = append(q, quote(s))
	}
	if len(l) > maxListed {
		q = append(q, fmt.Sprintf("and %d more", len(l)-maxListed))
	}
	return strings.Join(q, ", ")
}
