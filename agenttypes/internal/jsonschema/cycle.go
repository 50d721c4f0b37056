package jsonschema

import (
	"fmt"
	"maps"
	"slices"
)

// inPlace are the subschemas n applies to the very value it checks.
func (n *node) inPlace() []*node {
	out := []*node{n.ref, n.dynamicRef, n.recursiveRef, n.not, n.ifSchema, n.thenSchema, n.elseSch}
	out = append(out, n.allOf...)
	out = append(out, n.anyOf...)
	out = append(out, n.oneOf...)
	for _, k := range slices.Sorted(maps.Keys(n.dependentSchemas)) {
		out = append(out, n.dependentSchemas[k])
	}
	return slices.DeleteFunc(out, func(s *node) bool { return s == nil })
}

// checkCycles refuses a schema that reaches itself through subschemas
// applied in place ($ref, allOf, not, ...) without going into a part of
// the value: checking it would never end.
func checkCycles(roots []*node) error {
	const (
		open = 1
		done = 2
	)
	state := map[*node]int{}
	var visit func(n *node) error
	visit = func(n *node) error {
		switch state[n] {
		case open:
			return fmt.Errorf("at %s: the schema refers back to itself without going into a part of the value (through $ref, allOf, anyOf, oneOf, not or if), so checking it would never end", where(n.ptr))
		case done:
			return nil
		}
		state[n] = open
		for _, s := range n.inPlace() {
			if err := visit(s); err != nil {
				return err
			}
		}
		state[n] = done
		return nil
	}
	for _, r := range roots {
		if err := visit(r); err != nil {
			return err
		}
	}
	return nil
}
