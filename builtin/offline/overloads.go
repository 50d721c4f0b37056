package offline

import (
	"path"
	"slices"
	"strconv"
	"strings"
)

// A TypeScript function may be declared by several overload signatures,
// each a line or a few ending in ';', before the one implementation
// that has a body. They are one definition: the signatures and their
// doc comments say what the implementation does, and a finding for each
// would fill the answer with one function.

// overloadLookahead is how far below an overload signature its
// implementation may start.
const overloadLookahead = 80

// isScriptFile reports whether p is JavaScript or TypeScript.
func isScriptFile(p string) bool {
	switch path.Ext(p) {
	case ".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs":
		return true
	}
	return false
}

// isOverload reports whether read definition c is a function's
// signature with no body: its span, as read, ends with ';'.
func (c *cand) isOverload(lines map[int]string) bool {
	if !c.read || c.name == "" || !isScriptFile(c.path) || !strings.Contains(c.signature, "function") {
		return false
	}
	return strings.HasSuffix(strings.TrimSpace(lines[max(c.end, c.line)]), ";")
}

// implementationOf is the line of the implementation of overload c in
// the lines read below it: the next definition of the same name with a
// body, before any definition of another name; 0 when none was read.
func implementationOf(c *cand, lines map[int]string) int {
	for l := c.end + 1; l <= c.end+overloadLookahead; l++ {
		text, ok := lines[l]
		if !ok {
			return 0
		}
		switch name := defNameOf(c.path, text); {
		case name == "":
			continue
		case name != c.name:
			return 0
		}
		end := spanEnd(c.path, lines, l)
		if !strings.HasSuffix(strings.TrimSpace(lines[end]), ";") {
			return l
		}
		l = end // another signature: its implementation is further down
	}
	return 0
}

// mergeOverloads folds each overload signature read into its
// implementation: the candidate there when there is one, else the
// overload becomes the implementation. Its doc comment goes with it.
func mergeOverloads(out []*cand, byLine map[string]map[int]string) []*cand {
	at := make(map[string]*cand, len(out))
	for _, c := range out {
		at[c.path+"\x00"+strconv.Itoa(c.line)] = c
	}
	kept := out[:0]
	for _, c := range out {
		lines := byLine[c.path]
		if lines == nil || !c.isOverload(lines) {
			kept = append(kept, c)
			continue
		}
		doc := c.doc
		l := implementationOf(c, lines)
		if l == 0 {
			kept = append(kept, c)
			continue
		}
		key := c.path + "\x00" + strconv.Itoa(l)
		if impl := at[key]; impl != nil {
			impl.doc = append(slices.Clip(doc), impl.doc...)
			continue
		}
		delete(at, c.path+"\x00"+strconv.Itoa(c.line))
		c.line, c.signature, c.spanKnown, c.symDoc = l, signature(lines[l]), false, ""
		c.readSpan(lines)
		c.doc = append(slices.Clip(doc), c.doc...)
		at[key] = c
		kept = append(kept, c)
	}
	return kept
}
