package agenttypes

import (
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"

	"github.com/troupe-dev/troupe/agenttypes/internal/jsonschema"
)

// maxSchemaNodes bounds the size of a schema once its $refs are followed.
// A schema whose subschemas each $ref the level below twice doubles at
// every level, so a few kilobytes can stand for more subschemas than any
// answer could be checked against in a lifetime; such a schema is refused
// when it is loaded. Ordinary output and parameter schemas expand to tens
// or hundreds of subschemas.
const maxSchemaNodes = 10_000

// schemaRefKeywords are the keywords that point at another subschema.
var schemaRefKeywords = []string{"$ref", "$dynamicRef", "$recursiveRef"}

// checkSchemaSize refuses a schema (decoded JSON) that expands past
// maxSchemaNodes subschemas once every $ref is followed.
//
// The count is what validating one value could touch: each schema object
// or boolean counts 1, and a $ref adds the expanded size of its target.
// Definitions under $defs count where they are used, not where they are
// written. The expanded size of each subschema is remembered, so the
// count costs no more than the schema's own size even when the expansion
// is astronomically large.
//
// Recursion: a $ref back into a subschema that the expansion is already
// inside (a tree of sections whose children are sections) counts 1 and is
// allowed, however many such back-references there are. How much checking
// a recursive schema costs depends on how deeply the answer nests, which
// no rule about the schema alone can bound without also refusing ordinary
// trees and expression grammars; that cost is bounded instead while
// checking, by a work budget and the caller's context (see meter).
//
// $refs are resolved inside the document only: "#", JSON pointers
// ("#/$defs/a", with ~0 and ~1 escapes), anchors ("#name" from $anchor or
// $dynamicAnchor), and references relative to an $id. $dynamicRef and
// $recursiveRef count their static target. A $ref this cannot resolve
// counts 1; the compiler refuses it anyway.
func checkSchemaSize(doc any) error {
	z := newSchemaSizer(doc)
	n, _ := z.size(doc, "", 0)
	count := printer.Sprint(n)
	if z.over || n == math.MaxInt { // counting stopped, or the count overflowed
		count = "more than " + printer.Sprint(maxSchemaNodes)
	} else if n <= maxSchemaNodes {
		return nil
	}
	return fmt.Errorf("it expands to %s subschemas once its $refs are followed, over the limit of %s (a $ref back into a schema it is inside counts once); simplify the schema: fewer nested anyOf/oneOf, or fewer $refs to large definitions",
		count, printer.Sprint(maxSchemaNodes))
}

// schemaSizer counts a schema's expanded size; see checkSchemaSize.
// Subschemas are named by their JSON pointer from the document's root.
type schemaSizer struct {
	doc       any
	resources map[string]string   // absolute URI, without fragment → pointer
	anchors   map[string]string   // absolute URI "#" anchor → pointer
	bases     map[string]*url.URL // pointer of a subschema with an $id → its URI
	memo      map[string]int      // pointer → expanded size, when that does not depend on the path to it
	path      map[string]int      // pointer → depth, for the subschemas being expanded
	visits    int
	over      bool // visits passed maxSchemaNodes, so the size does too
}

func newSchemaSizer(doc any) *schemaSizer {
	z := &schemaSizer{doc: doc, resources: map[string]string{}, anchors: map[string]string{},
		bases: map[string]*url.URL{}, memo: map[string]int{}, path: map[string]int{}}
	root, _ := url.Parse(schemaURL)
	z.resources[root.String()] = ""
	z.bases[""] = root
	z.index(doc, "", root)
	return z
}

// index records the $ids and anchors of the subschemas under v.
func (z *schemaSizer) index(v any, ptr string, base *url.URL) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	if id, ok := m["$id"].(string); ok {
		if u, err := base.Parse(id); err == nil {
			frag := u.Fragment
			u.Fragment, u.RawFragment = "", ""
			if !strings.HasPrefix(id, "#") {
				base = u
				z.resources[u.String()] = ptr
				z.bases[ptr] = u
			}
			if frag != "" && !strings.HasPrefix(frag, "/") { // drafts 6 and 7: "$id": "#name"
				z.anchors[u.String()+"#"+frag] = ptr
			}
		}
	}
	for _, kw := range []string{"$anchor", "$dynamicAnchor"} {
		if name, ok := m[kw].(string); ok {
			z.anchors[base.String()+"#"+name] = ptr
		}
	}
	jsonschema.ForSubschemas(m, ptr, true, func(c any, p string) { z.index(c, p, base) })
}

// size returns the expanded size of v, the subschema at ptr, reached at
// depth; and the least depth of the subschemas on the path that its
// back-references point to (math.MaxInt if none). The size is remembered
// only when no back-reference leaves v, so it is the same wherever v is
// reached from.
func (z *schemaSizer) size(v any, ptr string, depth int) (n, low int) {
	low = math.MaxInt
	m, ok := v.(map[string]any)
	if !ok {
		return 1, low
	}
	if n, ok := z.memo[ptr]; ok {
		return n, low
	}
	if d, on := z.path[ptr]; on {
		return 1, d // recursion counts once
	}
	if z.visits++; z.visits > maxSchemaNodes {
		// Each visit adds at least 1 to the size: it is over the limit.
		z.over = true
		return 1, low
	}
	z.path[ptr] = depth
	defer delete(z.path, ptr)
	n = 1
	add := func(c, l int) {
		n = addSat(n, c)
		low = min(low, l)
	}
	jsonschema.ForSubschemas(m, ptr, false, func(c any, p string) { add(z.size(c, p, depth+1)) })
	for _, kw := range schemaRefKeywords {
		ref, ok := m[kw].(string)
		if !ok {
			continue
		}
		if target, tv, ok := z.resolve(ptr, ref); ok {
			add(z.size(tv, target, depth+1))
		} else {
			add(1, math.MaxInt)
		}
	}
	if z.over {
		return n, low
	}
	if low >= depth {
		z.memo[ptr] = n
	}
	return n, low
}

// resolve finds what ref, written in the subschema at ptr, points to.
func (z *schemaSizer) resolve(ptr, ref string) (string, any, bool) {
	u, err := z.baseOf(ptr).Parse(ref)
	if err != nil {
		return "", nil, false
	}
	frag := u.Fragment
	u.Fragment, u.RawFragment = "", ""
	res, ok := z.resources[u.String()]
	if !ok {
		return "", nil, false
	}
	if frag != "" && !strings.HasPrefix(frag, "/") {
		res, ok = z.anchors[u.String()+"#"+frag]
		if !ok {
			return "", nil, false
		}
		frag = ""
	}
	target := res
	v, ok := z.lookup(res)
	if !ok {
		return "", nil, false
	}
	if frag == "" {
		return target, v, true
	}
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			if v, ok = x[tok]; !ok {
				return "", nil, false
			}
			target += "/" + jsonschema.EscapeToken(tok)
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return "", nil, false
			}
			v = x[i]
			target += "/" + strconv.Itoa(i)
		default:
			return "", nil, false
		}
	}
	return target, v, true
}

// lookup returns the value at a pointer built by this file, whose tokens
// are escaped and whose array indices are canonical.
func (z *schemaSizer) lookup(ptr string) (any, bool) {
	v := z.doc
	if ptr == "" {
		return v, true
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// baseOf is the URI that $refs in the subschema at ptr are relative to:
// that of the nearest enclosing $id, or the document's.
func (z *schemaSizer) baseOf(ptr string) *url.URL { return jsonschema.Enclosing(z.bases, ptr) }

func addSat(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}
