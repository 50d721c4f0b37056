package tools

import (
	"bufio"
	"bytes"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// ignoreRules is the parsed content of one .gitignore (or .git/info/exclude)
// file, linked to the files of the directories above it. Nodes are
// immutable once built, so walkers share them freely.
type ignoreRules struct {
	parent *ignoreRules
	base   string // directory the file applies to, relative to the root; "." for the root
	rules  []ignoreRule
}

type ignoreRule struct {
	pattern  string
	negate   bool // "!pattern": re-include
	dirOnly  bool // "pattern/": directories only
	anchored bool // has a slash: matched against the path from base, not the name
	kind     ruleKind
}

type ruleKind uint8

const (
	ruleGlob    ruleKind = iota // doublestar match
	ruleLiteral                 // plain name: string compare
	ruleSuffix                  // "*.ext": suffix compare
)

// parseIgnore parses gitignore syntax. Invalid patterns are dropped, as
// git does.
func parseIgnore(parent *ignoreRules, base string, data []byte) *ignoreRules {
	n := &ignoreRules{parent: parent, base: base}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if r, ok := parseIgnoreLine(sc.Text()); ok {
			n.rules = append(n.rules, r)
		}
	}
	if len(n.rules) == 0 {
		return parent
	}
	return n
}

func parseIgnoreLine(line string) (ignoreRule, bool) {
	line = strings.TrimSuffix(line, "\r")
	if line == "" || line[0] == '#' {
		return ignoreRule{}, false
	}
	// Trailing spaces are ignored unless escaped with a backslash.
	for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, `\ `) {
		line = line[:len(line)-1]
	}
	var r ignoreRule
	if line[0] == '!' {
		r.negate = true
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		r.dirOnly = true
		line = strings.TrimRight(line, "/")
	}
	if strings.Contains(line, "/") {
		r.anchored = true
		line = strings.TrimPrefix(line, "/")
	}
	if line == "" || !doublestar.ValidatePattern(line) {
		return ignoreRule{}, false
	}
	r.pattern = line
	switch {
	case r.anchored:
	case !strings.ContainsAny(line, `*?[{\`):
		r.kind = ruleLiteral
	case line[0] == '*' && !strings.ContainsAny(line[1:], `*?[{\`):
		r.kind, r.pattern = ruleSuffix, line[1:]
	}
	return r, true
}

func (r *ignoreRule) match(rel, name string, isDir bool) bool {
	if r.dirOnly && !isDir {
		return false
	}
	switch r.kind {
	case ruleLiteral:
		return name == r.pattern
	case ruleSuffix:
		return strings.HasSuffix(name, r.pattern)
	}
	if !r.anchored {
		return doublestar.MatchUnvalidated(r.pattern, name)
	}
	// "dir/**" matches what is inside dir, not dir itself (doublestar
	// would), so that "!dir/keep" can still re-include.
	if p, ok := strings.CutSuffix(r.pattern, "/**"); ok && doublestar.MatchUnvalidated(p, rel) {
		return false
	}
	return doublestar.MatchUnvalidated(r.pattern, rel)
}

// ignored reports whether the entry at rel (relative to the root), named
// name, is ignored. The last matching rule wins, and a deeper file's rules
// come after its parents'.
func (n *ignoreRules) ignored(rel, name string, isDir bool) bool {
	for ; n != nil; n = n.parent {
		sub := rel
		if n.base != "." {
			sub = rel[len(n.base)+1:]
		}
		for i := len(n.rules) - 1; i >= 0; i-- {
			r := &n.rules[i]
			if r.match(sub, name, isDir) {
				return !r.negate
			}
		}
	}
	return false
}

// relJoin joins a root-relative directory and a name.
func relJoin(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

// ancestors returns the directories from the root down to dir's parent:
// for "a/b/c" it returns ".", "a", "a/b".
func ancestors(dir string) []string {
	if dir == "." {
		return nil
	}
	out := []string{"."}
	for i := range len(dir) {
		if dir[i] == '/' {
			out = append(out, dir[:i])
		}
	}
	return out
}
