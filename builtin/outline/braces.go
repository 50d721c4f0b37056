package outline

import (
	"slices"
	"strings"
)

// braceFile is a file of a brace language being outlined.
type braceFile struct {
	lang  Lang
	rules *langRules
	lines []braceLine
	decls []Decl
	// bodies marks, by index in decls, the declarations with a body, so
	// that a C prototype or a TypeScript overload signature of a function
	// defined in the file is dropped.
	bodies map[int]bool
	// closing is where each '{' is closed, made on first use.
	closing map[bracePos]bracePos
}

// maxHeaderLines bounds how far a declaration's header (its parameters,
// a where clause) may run before its body or its end.
const maxHeaderLines = 40

// parseBraces outlines a brace language by line patterns: a declaration
// is a line at the top level, or at the top of a container's body (a
// class, interface, trait, impl block, module or namespace), that a
// pattern of its language matches; it spans to the brace that closes
// its body, or to its ';'. The comment lines just above it are its doc.
func parseBraces(lang Lang, src []byte) []Decl {
	f := &braceFile{lang: lang, rules: braceRules()[lang], lines: lexBraces(lang, src), bodies: make(map[int]bool)}
	f.scope(0, len(f.lines)-1, 0, "top", "", false)
	switch lang {
	case C:
		f.dropPrototypes()
	case JS:
		f.joinOverloads()
	}
	return f.decls
}

// scope finds the declarations on lines from to to (0-based) at brace
// depth depth with the patterns of set, inside the container named
// cont ("" at the top level).
func (f *braceFile) scope(from, to, depth int, set, cont string, test bool) {
	for i := from; i <= to && i < len(f.lines); i++ {
		l := f.lines[i]
		if l.inside || l.depth != depth {
			continue
		}
		m, ok := f.match(set, i, cont)
		if !ok {
			continue
		}
		end, open, openCol := f.braceSpan(i)
		if m.p.directive {
			end, open = i, -1 // a macro: its line and those it continues on
			for end+1 < len(f.lines) && strings.HasSuffix(f.lines[end].text, `\`) {
				end++
			}
		}
		if m.p.nameAtEnd {
			m.name = cTypedefName(f.lines[end].code)
			if m.name == "" {
				i = end
				continue
			}
		}
		owner := cont
		if m.cont != "" {
			owner = m.cont // Foo.prototype.bar = function
		}
		qual := m.name
		if owner != "" {
			qual = owner + f.rules.sep + m.name
		}
		isTest := test || m.p.testable && f.cfgTest(i)
		if !m.p.hidden {
			start := i
			if m.p.knr {
				start = i - 1 // its type's line
			}
			if open >= 0 {
				f.bodies[len(f.decls)] = true
			}
			f.decls = append(f.decls, Decl{
				Kind: m.p.kind, Name: m.name, Container: containerName(owner), Qualified: qual,
				Line: start + 1, End: end + 1, Signature: f.signature(start, end, open, openCol),
				Doc: f.docAbove(start), Test: isTest,
			})
		}
		if m.p.members != "" && open >= 0 {
			f.scope(open+1, end, depthAt(f.lines[open], openCol)+1, m.p.members, qual, isTest)
		}
		i = max(i, end)
	}
}

// containerName is the last element of a qualified container name.
func containerName(cont string) string {
	if i := strings.LastIndexAny(cont, ".:"); i >= 0 {
		return cont[i+1:]
	}
	return cont
}

// depthAt is the brace depth just before column col of line l.
func depthAt(l braceLine, col int) int {
	d := l.depth
	for k := 0; k < col && k < len(l.code); k++ {
		switch l.code[k] {
		case '{':
			d++
		case '}':
			d--
		}
	}
	return d
}

// braceSpan finds where the declaration starting on line i ends: at
// the brace that closes its body (open is the line of the body's '{'
// and openCol its column), or, with no body (open -1), at its ';' or
// at the end of the line where its expression ends.
func (f *braceFile) braceSpan(i int) (end, open, openCol int) {
	lines := f.lines
	paren := 0
	for l, n := i, 0; l < len(lines) && n < maxHeaderLines; l, n = l+1, n+1 {
		code := lines[l].code
		angle := 0 // type parameters, where an object type may be: Promise<{ id: number }>
		for k := 0; k < len(code); k++ {
			switch c := code[k]; c {
			case '(', '[':
				paren++
			case ')', ']':
				paren--
			case '<':
				angle++
			case '>':
				if k > 0 && code[k-1] != '=' && code[k-1] != '-' {
					angle = max(angle-1, 0)
				}
			case '{':
				cl, ck := f.matchBrace(l, k)
				rest := ""
				if cl == l && ck+1 < len(code) {
					rest = code[ck+1:]
				}
				// The body, unless inside brackets, or an object type
				// that a body follows on the same line: (): { id: number } {
				if paren <= 0 && angle == 0 && (cl > l || !strings.Contains(rest, "{")) {
					return cl, l, k
				}
				if cl > l { // an object inside parentheses: go on after it
					l, code, angle, k = cl, lines[cl].code, 0, ck
				}
				k = max(k, ck)
			case ';':
				if paren <= 0 {
					return l, -1, 0
				}
			}
		}
		if paren <= 0 && !continues(lines, l) {
			return l, -1, 0
		}
	}
	return i, -1, 0
}

// matchBrace is the line and column of the brace that closes the one at
// line l, column k; the end of the file when none does.
func (f *braceFile) matchBrace(l, k int) (int, int) {
	if f.closing == nil {
		f.pairBraces()
	}
	if c, ok := f.closing[bracePos{l, k}]; ok {
		return c.line, c.col
	}
	last := len(f.lines) - 1
	return last, len(f.lines[last].code)
}

// bracePos is where a brace is.
type bracePos struct{ line, col int }

// pairBraces finds the closing brace of each opening one, in one pass,
// so that spans cost the same however the braces nest or fail to close.
func (f *braceFile) pairBraces() {
	f.closing = make(map[bracePos]bracePos)
	var open []bracePos
	for l, line := range f.lines {
		for k := 0; k < len(line.code); k++ {
			switch line.code[k] {
			case '{':
				open = append(open, bracePos{l, k})
			case '}':
				if n := len(open); n > 0 {
					f.closing[open[n-1]] = bracePos{l, k}
					open = open[:n-1]
				}
			}
		}
	}
}

// continues reports whether the declaration whose header has reached
// the end of line l goes on on the next line: the line ends with an
// operator or a comma, a string or comment runs on, or the next one starts with what cannot start a
// statement (a body's brace, a where or throws clause, an operator).
func continues(lines []braceLine, l int) bool {
	if l+1 < len(lines) && lines[l+1].inside {
		return true // a string or comment runs on
	}
	t := strings.TrimSpace(lines[l].code)
	for _, suffix := range []string{",", "(", "[", "=", "=>", ":", "|", "&", "+", "-", "*", "?", ".", "<", "->", "extends", "implements", "throws", "where"} {
		if strings.HasSuffix(t, suffix) {
			return true
		}
	}
	for n := l + 1; n < len(lines) && n <= l+3; n++ {
		next := strings.TrimSpace(lines[n].code)
		if next == "" {
			continue
		}
		for _, prefix := range []string{"{", ".", "=>", "?", ":", "|", "&", "where", "throws", "->", "extends", "implements", "=", ")"} {
			if strings.HasPrefix(next, prefix) {
				return true
			}
		}
		return false
	}
	return false
}

// signature is the header of the declaration on lines i to end: up to
// its body's brace, or all of it without the ';', trailing comments cut,
// on one line.
func (f *braceFile) signature(i, end, open, openCol int) string {
	last := end
	if open >= 0 {
		last = open
	}
	last = min(last, i+10)
	var parts []string
	for l := i; l <= last; l++ {
		text, code := f.lines[l].text, f.lines[l].code
		if l == open {
			text, code = text[:openCol], code[:openCol]
		}
		if k := strings.LastIndex(text, "//"); k >= 0 && strings.TrimSpace(code[k:]) == "" {
			text = text[:k]
		}
		parts = append(parts, text)
	}
	s := oneLine(strings.Join(parts, " "))
	return strings.TrimSpace(strings.TrimSuffix(s, ";"))
}

// docAbove is the block of comment lines just above line i, attributes,
// annotations and decorators passed over, markers removed.
func (f *braceFile) docAbove(i int) string {
	j := i - 1
	for j >= 0 && isAttribute(f.lines[j].text) && !f.lines[j].inside {
		j--
	}
	var doc []string
	for ; j >= 0; j-- {
		l := f.lines[j]
		t := strings.TrimSpace(l.text)
		if t == "" || strings.TrimSpace(l.code) != "" && !strings.HasPrefix(strings.TrimSpace(l.code), "*/") {
			break
		}
		if !l.inside && !strings.HasPrefix(t, "//") && !strings.HasPrefix(t, "/*") {
			break // a string, or a directive
		}
		doc = append(doc, stripCommentMarkers(t))
	}
	for a, b := 0, len(doc)-1; a < b; a, b = a+1, b-1 {
		doc[a], doc[b] = doc[b], doc[a]
	}
	return strings.TrimSpace(strings.Join(doc, "\n"))
}

// isAttribute reports whether a line is a Rust attribute, a Java
// annotation or a TypeScript decorator.
func isAttribute(text string) bool {
	t := strings.TrimSpace(text)
	return strings.HasPrefix(t, "#[") || strings.HasPrefix(t, "@")
}

// stripCommentMarkers removes a comment line's markers: //, ///, //!,
// /*, /**, */ and a leading *.
func stripCommentMarkers(t string) string {
	for _, p := range []string{"///", "//!", "//", "/**", "/*!", "/*"} {
		if s, ok := strings.CutPrefix(t, p); ok {
			t = s
			break
		}
	}
	t = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(t), "*/"))
	if s, ok := strings.CutPrefix(t, "*"); ok {
		t = s
	}
	return strings.TrimSpace(t)
}

// cfgTest reports whether the attributes just above line i hold
// #[cfg(test)].
func (f *braceFile) cfgTest(i int) bool {
	for j := i - 1; j >= 0 && isAttribute(f.lines[j].text); j-- {
		if strings.Contains(strings.ReplaceAll(f.lines[j].text, " ", ""), "#[cfg(test)]") {
			return true
		}
	}
	return false
}

// dropPrototypes drops the C prototypes of functions the file defines.
func (f *braceFile) dropPrototypes() {
	defined := make(map[string]bool)
	for i, d := range f.decls {
		if f.bodies[i] && d.Kind == Func {
			defined[d.Name] = true
		}
	}
	out := f.decls[:0]
	for i, d := range f.decls {
		if d.Kind == Func && !f.bodies[i] && defined[d.Name] && !strings.HasPrefix(d.Signature, "#") {
			continue
		}
		out = append(out, d)
	}
	f.decls = out
}

// joinOverloads makes the overload signatures of a TypeScript function
// one declaration with the implementation that follows them: its span,
// with their doc comments before its own, where a question's words are
// most often written. Signatures that no implementation follows (a
// declaration file's, an interface's) stay.
func (f *braceFile) joinOverloads() {
	out := f.decls[:0]
	var docs []string // of the signatures since the last declaration kept
	for i, d := range f.decls {
		overload := d.Kind == Func && !f.bodies[i] && i+1 < len(f.decls) &&
			f.decls[i+1].Kind == Func && f.decls[i+1].Qualified == d.Qualified
		if overload && f.implemented(i) {
			if d.Doc != "" && !slices.Contains(docs, d.Doc) {
				docs = append(docs, d.Doc)
			}
			continue
		}
		if len(docs) > 0 {
			if d.Doc != "" && !slices.Contains(docs, d.Doc) {
				docs = append(docs, d.Doc)
			}
			d.Doc = strings.Join(docs, "\n\n") // a paragraph each
			docs = nil
		}
		out = append(out, d)
	}
	f.decls = out
}

// implemented reports whether the run of same-named functions that the
// declaration at i starts ends with one that has a body.
func (f *braceFile) implemented(i int) bool {
	for j := i + 1; j < len(f.decls) && f.decls[j].Qualified == f.decls[i].Qualified && f.decls[j].Kind == Func; j++ {
		if f.bodies[j] {
			return true
		}
	}
	return false
}
