package jsonschema

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
)

// compileObject compiles the keywords of the schema object m into n.
func (c *compiler) compileObject(n *node, m map[string]any) error {
	if err := c.compileRefs(n, m); err != nil {
		return err
	}
	if _, ok := m["$ref"]; ok && c.draft <= Draft7 {
		return nil // in drafts up to 7, a $ref's siblings are ignored
	}
	if err := c.compileValues(n, m); err != nil {
		return err
	}
	return c.compileApplicators(n, m)
}

func (c *compiler) compileRefs(n *node, m map[string]any) error {
	if ref, ok := m["$ref"].(string); ok {
		target, err := c.resolve(n.ptr, ref)
		if err != nil {
			return err
		}
		if n.ref, err = c.compile(target); err != nil {
			return err
		}
	}
	if ref, ok := m["$dynamicRef"].(string); ok && c.draft >= Draft2020 {
		target, err := c.resolve(n.ptr, ref)
		if err != nil {
			return err
		}
		if n.dynamicRef, err = c.compile(target); err != nil {
			return err
		}
		// It is dynamic when it names an anchor its static target declares
		// as a $dynamicAnchor.
		if i := strings.IndexByte(ref, '#'); i >= 0 {
			name := ref[i+1:]
			if tm, ok := c.values[target].(map[string]any); ok && tm["$dynamicAnchor"] == name && name != "" && !strings.HasPrefix(name, "/") {
				n.dynamicName = name
			}
		}
	}
	if ref, ok := m["$recursiveRef"].(string); ok && c.draft == Draft2019 {
		target, err := c.resolve(n.ptr, ref)
		if err != nil {
			return err
		}
		if n.recursiveRef, err = c.compile(target); err != nil {
			return err
		}
	}
	if name, ok := m["$dynamicAnchor"].(string); ok && c.draft >= Draft2020 {
		n.resource.dynamic[name] = n
	}
	if b, ok := m["$recursiveAnchor"].(bool); ok && b && c.draft == Draft2019 && c.byPtr[n.ptr] != nil {
		n.resource.recursive = true
	}
	return nil
}

// compileValues compiles the keywords that check the value itself.
func (c *compiler) compileValues(n *node, m map[string]any) error {
	switch t := m["type"].(type) {
	case string:
		n.types = []string{t}
	case []any:
		n.types = stringsOf(t)
	}
	n.compileEqual(m, c.draft)
	n.multipleOf, n.minimum, n.maximum = numberOf(m["multipleOf"]), numberOf(m["minimum"]), numberOf(m["maximum"])
	if c.draft == Draft4 {
		if b, _ := m["exclusiveMinimum"].(bool); b {
			n.exclusiveMinimum, n.minimum = n.minimum, nil
		}
		if b, _ := m["exclusiveMaximum"].(bool); b {
			n.exclusiveMaximum, n.maximum = n.maximum, nil
		}
	} else {
		n.exclusiveMinimum, n.exclusiveMaximum = numberOf(m["exclusiveMinimum"]), numberOf(m["exclusiveMaximum"])
	}
	n.numberKind = slices.Contains(n.types, "number") || slices.Contains(n.types, "integer")
	n.numberValue = slices.Contains(n.types, "integer") || n.multipleOf != nil || n.minimum != nil || n.maximum != nil ||
		n.exclusiveMinimum != nil || n.exclusiveMaximum != nil
	n.minLength, n.maxLength = intOf(m["minLength"]), intOf(m["maxLength"])
	if p, ok := m["pattern"].(string); ok {
		var err error
		if n.pattern, err = compilePattern(p); err != nil {
			return fmt.Errorf("at %s/pattern: %w", n.ptr, err)
		}
	}
	n.minItems, n.maxItems = intOf(m["minItems"]), intOf(m["maxItems"])
	n.uniqueItems, _ = m["uniqueItems"].(bool)
	if c.draft >= Draft2019 {
		n.minContains, n.maxContains = intOf(m["minContains"]), intOf(m["maxContains"])
	}
	n.minProperties, n.maxProperties = intOf(m["minProperties"]), intOf(m["maxProperties"])
	if r, ok := m["required"].([]any); ok {
		n.required = stringsOf(r)
	}
	dep := "dependentRequired"
	if c.draft <= Draft7 {
		dep = "dependencies"
	}
	if d, ok := m[dep].(map[string]any); ok {
		for k, v := range d {
			if l, ok := v.([]any); ok {
				if n.dependentRequired == nil {
					n.dependentRequired = map[string][]string{}
				}
				n.dependentRequired[k] = stringsOf(l)
			}
		}
	}
	return nil
}

// compileApplicators compiles the keywords that apply subschemas.
func (c *compiler) compileApplicators(n *node, m map[string]any) error {
	var err error
	one := func(kw string) *node {
		if err != nil {
			return nil
		}
		var s *node
		if _, ok := m[kw]; ok && isSchema(m[kw]) {
			s, err = c.sub(n, kw)
		}
		return s
	}
	list := func(kw string) []*node {
		if err != nil {
			return nil
		}
		var l []*node
		l, err = c.subList(n, m, kw)
		return l
	}
	set := func(kw string) map[string]*node {
		if err != nil {
			return nil
		}
		var s map[string]*node
		s, err = c.subMap(n, m, kw)
		return s
	}
	n.allOf, n.anyOf, n.oneOf, n.not = list("allOf"), list("anyOf"), list("oneOf"), one("not")
	if c.draft >= Draft7 {
		n.ifSchema, n.thenSchema, n.elseSch = one("if"), one("then"), one("else")
	}
	n.properties, n.additionalProperties = set("properties"), one("additionalProperties")
	if c.draft >= Draft6 {
		n.propertyNames, n.contains = one("propertyNames"), one("contains")
	}
	if c.draft <= Draft7 {
		n.dependentSchemas = set("dependencies")
	} else {
		n.dependentSchemas = set("dependentSchemas")
	}
	if c.draft >= Draft2019 {
		n.unevaluatedItems, n.unevaluatedProperties = one("unevaluatedItems"), one("unevaluatedProperties")
	}
	switch {
	case c.draft >= Draft2020:
		n.prefixItems, n.items = list("prefixItems"), one("items")
	case isList(m["items"]):
		n.prefixItems, n.items = list("items"), one("additionalItems")
	default:
		n.items = one("items")
	}
	if err != nil {
		return err
	}
	if pp, ok := m["patternProperties"].(map[string]any); ok {
		for p := range pp {
			re, rerr := compilePattern(p)
			if rerr != nil {
				return fmt.Errorf("at %s/patternProperties: %w", n.ptr, rerr)
			}
			s, serr := c.sub(n, "patternProperties", p)
			if serr != nil {
				return serr
			}
			n.patternProperties = append(n.patternProperties, patternProperty{re, s})
		}
	}
	return nil
}

// compileEqual keys the values of enum and const (see appendKey).
func (n *node) compileEqual(m map[string]any, draft int) {
	if e, ok := m["enum"].([]any); ok {
		n.enum = &enumValues{keys: make(map[string]bool, len(e)), msg: enumMessage(e)}
		for _, v := range e {
			k, _ := keyOf(v, -1)
			n.enum.keys[k] = true
			n.keyLimit = max(n.keyLimit, len(k))
		}
	}
	if v, ok := m["const"]; ok && draft >= Draft6 {
		k, _ := keyOf(v, -1)
		n.constant = &constValue{key: k, msg: "'const' failed"}
		if isPrimitive(v) {
			n.constant.msg = "value must be " + display(v)
		}
		n.keyLimit = max(n.keyLimit, len(k))
	}
}

// maxPatternInstructions bounds the size of a pattern's compiled program.
// Matching a text costs at worst its length times the program's size, and
// a repetition such as \p{L}{1000} is a thousand instructions: the
// matching is charged to the meter by that product, and a pattern too
// large for any but short texts is refused at once.
const maxPatternInstructions = 5_000

// compilePattern compiles a pattern and measures its program.
func compilePattern(p string) (*pattern, error) {
	parsed, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return nil, fmt.Errorf("%s is not a regular expression: %v", quote(p), err)
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		return nil, fmt.Errorf("%s is not a regular expression: %v", quote(p), err)
	}
	if len(prog.Inst) > maxPatternInstructions {
		return nil, fmt.Errorf("%s compiles to %d instructions, over the limit of 5,000; use a simpler pattern (fewer or shorter repetitions such as {1000})",
			quote(p), len(prog.Inst))
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, fmt.Errorf("%s is not a regular expression: %v", quote(p), err)
	}
	return &pattern{re: re, text: p, insts: max(len(prog.Inst), 1)}, nil
}

func isList(v any) bool {
	_, ok := v.([]any)
	return ok
}
