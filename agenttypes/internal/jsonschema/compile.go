package jsonschema

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Drafts, by the year or number that names them.
const (
	Draft4    = 4
	Draft6    = 6
	Draft7    = 7
	Draft2019 = 2019
	Draft2020 = 2020
)

// draftOf names the draft a $schema value stands for; 0 when none.
func draftOf(s string) int {
	s = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(s, "https://"), "http://"), "#")
	switch s {
	case "json-schema.org/draft-04/schema":
		return Draft4
	case "json-schema.org/draft-06/schema":
		return Draft6
	case "json-schema.org/draft-07/schema":
		return Draft7
	case "json-schema.org/draft/2019-09/schema":
		return Draft2019
	case "json-schema.org/draft/2020-12/schema", "json-schema.org/schema":
		return Draft2020
	}
	return 0
}

// A Schema is a compiled schema; it is safe for concurrent use.
type Schema struct {
	root *node
}

// A node is one compiled subschema.
type node struct {
	ptr      string // JSON pointer from the document's root
	draft    int
	boolean  *bool
	resource *resource

	ref, recursiveRef *node
	dynamicRef        *node  // the static target
	dynamicName       string // the anchor a $dynamicRef looks for, if dynamic

	types                               []string
	numberKind                          bool // types name number or integer
	numberValue                         bool // a keyword needs a number's value
	enum                                *enumValues
	constant                            *constValue
	keyLimit                            int // the longest key of enum and const
	multipleOf, minimum, maximum        *number
	exclusiveMinimum, exclusiveMaximum  *number
	minLength, maxLength                int
	pattern                             *pattern
	minItems, maxItems                  int
	uniqueItems                         bool
	minContains, maxContains            int
	minProperties, maxProperties        int
	required                            []string
	dependentRequired                   map[string][]string
	properties                          map[string]*node
	patternProperties                   []patternProperty
	additionalProperties, propertyNames *node
	dependentSchemas                    map[string]*node
	prefixItems                         []*node
	items, contains                     *node
	unevaluatedItems                    *node
	unevaluatedProperties               *node
	allOf, anyOf, oneOf                 []*node
	not, ifSchema, thenSchema, elseSch  *node
}

type patternProperty struct {
	p *pattern
	n *node
}

// A pattern is a compiled regular expression and the size of its program,
// which multiplies the cost of matching it.
type pattern struct {
	re    *regexp.Regexp
	text  string
	insts int
}

// An enumValues is an enum's values by their keys (see appendKey), and
// what its failure says.
type enumValues struct {
	keys map[string]bool
	msg  string
}

// A constValue is a const's key and what its failure says.
type constValue struct {
	key, msg string
}

// A number is a schema's number: its value, and its text for messages.
type number struct {
	d    decimal
	text string
}

// A resource is a schema with an $id of its own (or the document).
type resource struct {
	uri       string
	dynamic   map[string]*node // $dynamicAnchor names
	recursive bool             // $recursiveAnchor: true
	root      string           // its pointer
	rootNode  *node            // its compiled root
}

// compiler compiles one document.
type compiler struct {
	doc       any
	draft     int
	values    map[string]any       // pointer → subschema
	bases     map[string]*url.URL  // pointer → base URI, where it changes
	resources map[string]*resource // absolute URI, no fragment → resource
	byPtr     map[string]*resource // pointer → resource rooted there
	anchors   map[string]string    // URI#name → pointer
	dynamic   []string             // pointers of the subschemas with a $dynamicAnchor
	nodes     map[string]*node
}

// Compile compiles doc, a schema decoded as Unmarshal does, known by
// name (a URI) for its relative references. A $ref may name only a part
// of the document. The error says where the schema breaks its draft's
// rules, or which reference cannot be followed.
func Compile(doc any, name string) (*Schema, error) {
	draft := Draft2020
	if m, ok := doc.(map[string]any); ok {
		if s, ok := m["$schema"].(string); ok {
			if draft = draftOf(s); draft == 0 {
				return nil, fmt.Errorf("$schema %q names no draft this reads (2020-12, 2019-09, 7, 6 or 4)", s)
			}
		}
	}
	if err := checkShape(doc, "", draft); err != nil {
		return nil, err
	}
	base, err := url.Parse(name)
	if err != nil {
		return nil, err
	}
	c := &compiler{doc: doc, draft: draft, values: map[string]any{}, bases: map[string]*url.URL{}, resources: map[string]*resource{},
		byPtr: map[string]*resource{}, anchors: map[string]string{}, nodes: map[string]*node{}}
	root := &resource{uri: base.String(), dynamic: map[string]*node{}}
	c.resources[root.uri] = root
	c.byPtr[""] = root
	c.bases[""] = base
	c.index(doc, "", base)
	n, err := c.compile("")
	if err != nil {
		return nil, err
	}
	// A $dynamicRef may lead to any dynamic anchor in scope, whether or
	// not a static reference reaches it.
	roots := []*node{n}
	for _, ptr := range c.dynamic {
		d, err := c.compile(ptr)
		if err != nil {
			return nil, err
		}
		roots = append(roots, d)
	}
	if err := checkCycles(roots); err != nil {
		return nil, err
	}
	return &Schema{root: n}, nil
}

func (c *compiler) idKeyword() string {
	if c.draft == Draft4 {
		return "id"
	}
	return "$id"
}

// index records the subschemas under v, their $ids and their anchors.
func (c *compiler) index(v any, ptr string, base *url.URL) {
	c.values[ptr] = v
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	_, hasRef := m["$ref"]
	if id, ok := m[c.idKeyword()].(string); ok && !(hasRef && c.draft <= Draft7) {
		if u, err := base.Parse(id); err == nil {
			frag := u.Fragment
			u.Fragment, u.RawFragment = "", ""
			if !strings.HasPrefix(id, "#") {
				base = u
				c.bases[ptr] = u
				r := &resource{uri: u.String(), dynamic: map[string]*node{}, root: ptr}
				c.resources[r.uri] = r
				c.byPtr[ptr] = r
			}
			if frag != "" && c.draft <= Draft7 {
				c.anchors[u.String()+"#"+frag] = ptr
			}
		}
	}
	if name, ok := m["$anchor"].(string); ok && c.draft >= Draft2019 {
		c.anchors[base.String()+"#"+name] = ptr
	}
	if name, ok := m["$dynamicAnchor"].(string); ok && c.draft >= Draft2020 {
		c.anchors[base.String()+"#"+name] = ptr
		c.dynamic = append(c.dynamic, ptr)
	}
	ForSubschemas(m, ptr, true, func(sub any, p string) { c.index(sub, p, base) })
}

// ForSubschemas calls f with each subschema of the schema object m, in a
// fixed order, with its JSON pointer below ptr; defs adds the
// definitions ($defs, definitions), which apply only where a $ref points.
func ForSubschemas(m map[string]any, ptr string, defs bool, f func(any, string)) {
	one := []string{"not", "if", "then", "else", "items", "additionalItems", "contains", "additionalProperties",
		"propertyNames", "unevaluatedItems", "unevaluatedProperties", "contentSchema"}
	list := []string{"allOf", "anyOf", "oneOf", "prefixItems", "items"}
	maps := []string{"properties", "patternProperties", "dependentSchemas", "dependencies"}
	if defs {
		maps = append(maps, "$defs", "definitions")
	}
	for _, kw := range one {
		if c, ok := m[kw]; ok && isSchema(c) {
			f(c, ptr+"/"+EscapeToken(kw))
		}
	}
	for _, kw := range list {
		if l, ok := m[kw].([]any); ok {
			for i, c := range l {
				f(c, ptr+"/"+kw+"/"+strconv.Itoa(i))
			}
		}
	}
	for _, kw := range maps {
		sub, ok := m[kw].(map[string]any)
		if !ok {
			continue
		}
		keys := make([]string, 0, len(sub))
		for k := range sub {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if c := sub[k]; isSchema(c) {
				f(c, ptr+"/"+EscapeToken(kw)+"/"+EscapeToken(k))
			}
		}
	}
}

func isSchema(v any) bool {
	switch v.(type) {
	case map[string]any, bool:
		return true
	}
	return false
}

// EscapeToken escapes a name as one token of a JSON pointer.
func EscapeToken(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}

// baseOf is the URI references in the subschema at ptr are relative to.
func (c *compiler) baseOf(ptr string) *url.URL { return Enclosing(c.bases, ptr) }

// resourceOf is the resource the subschema at ptr belongs to.
func (c *compiler) resourceOf(ptr string) *resource { return Enclosing(c.byPtr, ptr) }

// Enclosing is byPtr's value for the subschema at the JSON pointer ptr or,
// when it has none, for the nearest subschema enclosing it: the base URI
// or the resource that a subschema inherits from the one it is in.
func Enclosing[V any](byPtr map[string]V, ptr string) V {
	for {
		if v, ok := byPtr[ptr]; ok {
			return v
		}
		i := strings.LastIndexByte(ptr, '/')
		if i < 0 {
			return byPtr[""]
		}
		ptr = ptr[:i]
	}
}

// resolve finds the pointer of the subschema ref names, from the
// subschema at ptr.
func (c *compiler) resolve(ptr, ref string) (string, error) {
	u, err := c.baseOf(ptr).Parse(ref)
	if err != nil {
		return "", fmt.Errorf("at %s: $ref %q is not a URI reference: %v", where(ptr), ref, err)
	}
	frag := u.Fragment
	u.Fragment, u.RawFragment = "", ""
	r, ok := c.resources[u.String()]
	if !ok {
		return "", fmt.Errorf("at %s: $ref %q names another document (%s); refer only to parts of this one, under $defs", where(ptr), ref, u)
	}
	if frag != "" && !strings.HasPrefix(frag, "/") {
		target, ok := c.anchors[u.String()+"#"+frag]
		if !ok {
			return "", fmt.Errorf("at %s: $ref %q names no anchor of the schema", where(ptr), ref)
		}
		return target, nil
	}
	target := r.root
	if frag == "" {
		return target, nil
	}
	v := c.values[r.root]
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			if v, ok = x[tok]; !ok {
				return "", fmt.Errorf("at %s: $ref %q names nothing in the schema", where(ptr), ref)
			}
			target += "/" + EscapeToken(tok)
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return "", fmt.Errorf("at %s: $ref %q names nothing in the schema", where(ptr), ref)
			}
			v = x[i]
			target += "/" + strconv.Itoa(i)
		default:
			return "", fmt.Errorf("at %s: $ref %q names nothing in the schema", where(ptr), ref)
		}
	}
	if _, ok := c.values[target]; !ok {
		if !isSchema(v) {
			return "", fmt.Errorf("at %s: $ref %q names a part of the schema that is not a schema", where(ptr), ref)
		}
		c.index(v, target, c.baseOf(target))
	}
	return target, nil
}

func where(ptr string) string {
	if ptr == "" {
		return "/"
	}
	return ptr
}

// compile compiles the subschema at ptr, once.
func (c *compiler) compile(ptr string) (*node, error) {
	if n, ok := c.nodes[ptr]; ok {
		return n, nil
	}
	n := &node{ptr: ptr, draft: c.draft, resource: c.resourceOf(ptr), minLength: -1, maxLength: -1, minItems: -1, maxItems: -1,
		minContains: -1, maxContains: -1, minProperties: -1, maxProperties: -1}
	c.nodes[ptr] = n
	if r := c.byPtr[ptr]; r != nil {
		r.rootNode = n
	}
	switch v := c.values[ptr].(type) {
	case bool:
		n.boolean = &v
		return n, nil
	case map[string]any:
		if err := c.compileObject(n, v); err != nil {
			return nil, err
		}
		return n, nil
	}
	return nil, fmt.Errorf("at %s: a schema is an object or a boolean", where(ptr))
}

// sub compiles the subschema under keyword path kw of n.
func (c *compiler) sub(n *node, kw ...string) (*node, error) {
	p := n.ptr
	for _, k := range kw {
		p += "/" + EscapeToken(k)
	}
	if _, ok := c.values[p]; !ok {
		return nil, nil
	}
	return c.compile(p)
}

func (c *compiler) subList(n *node, m map[string]any, kw string) ([]*node, error) {
	l, ok := m[kw].([]any)
	if !ok {
		return nil, nil
	}
	out := make([]*node, len(l))
	for i := range l {
		s, err := c.compile(n.ptr + "/" + kw + "/" + strconv.Itoa(i))
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

func (c *compiler) subMap(n *node, m map[string]any, kw string) (map[string]*node, error) {
	sub, ok := m[kw].(map[string]any)
	if !ok {
		return nil, nil
	}
	out := map[string]*node{}
	for k, v := range sub {
		if !isSchema(v) {
			continue
		}
		s, err := c.sub(n, kw, k)
		if err != nil {
			return nil, err
		}
		out[k] = s
	}
	return out, nil
}

// numberOf is v as a schema's number; nil when it is none, or one that
// cannot be checked (see maxExponentDigits).
func numberOf(v any) *number {
	n, ok := v.(json.Number)
	if !ok {
		return nil
	}
	d, err := parseDecimal(string(n))
	if err != nil {
		return nil
	}
	return &number{d: d, text: cut(string(n))}
}

// intOf is v as a count: -1 when it is not a non-negative integer that
// fits an int64.
func intOf(v any) int {
	if n := numberOf(v); n != nil {
		if i, ok := n.d.int64Value(); ok && i >= 0 {
			return int(min(i, 1<<31))
		}
	}
	return -1
}

func stringsOf(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, s := range l {
		if s, ok := s.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
