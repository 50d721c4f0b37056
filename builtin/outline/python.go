package outline

import (
	"strings"
)

// pyLine is a line of Python as the outline sees it.
type pyLine struct {
	text    string // without its line ending
	code    bool   // starts outside any string or bracket: a statement may start here
	indent  int    // columns of leading white space (a tab counts 8)
	comment int    // offset of a '#' comment, or len(text)
	depth   int    // brackets open at the line's end
}

// scanPython splits src into lines and finds, for each, whether a
// statement may start on it, where its comment starts, and the brackets
// still open at its end, past strings (triple-quoted ones over several
// lines too).
func scanPython(src []byte) []pyLine {
	text := strings.ReplaceAll(string(src), "\r\n", "\n")
	raw := strings.Split(text, "\n")
	lines := make([]pyLine, len(raw))
	depth, triple := 0, ""
	for n, t := range raw {
		l := pyLine{text: t, code: triple == "" && depth == 0, comment: len(t)}
		for _, r := range t {
			if r == ' ' {
				l.indent++
			} else if r == '\t' {
				l.indent += 8 - l.indent%8
			} else {
				break
			}
		}
		for i := 0; i < len(t); i++ {
			if triple != "" {
				if strings.HasPrefix(t[i:], triple) {
					i += 2
					triple = ""
				} else if t[i] == '\\' {
					i++
				}
				continue
			}
			switch c := t[i]; c {
			case '#':
				l.comment = i
				i = len(t)
			case '"', '\'':
				q := t[i : i+1]
				if strings.HasPrefix(t[i:], q+q+q) {
					triple = q + q + q
					i += 2
					continue
				}
				i = pyStringEnd(t, i)
			case '(', '[', '{':
				depth++
			case ')', ']', '}':
				depth = max(depth-1, 0)
			}
		}
		l.depth = depth
		lines[n] = l
	}
	return lines
}

// pyStringEnd is the index of the quote that closes the one-line string
// opened at t[i], or the line's last byte.
func pyStringEnd(t string, i int) int {
	q := t[i]
	for j := i + 1; j < len(t); j++ {
		switch t[j] {
		case '\\':
			j++
		case q:
			return j
		}
	}
	return len(t) - 1
}

// pyScope is a class or function whose body holds the lines up to end.
type pyScope struct {
	name   string
	class  bool
	indent int
	end    int // 0-based last line
}

// parsePython outlines Python: classes and functions (methods named
// Class.method; functions inside functions are left out), each spanning
// its body by indentation, with its docstring as doc, or else the
// comment lines just above it.
func parsePython(src []byte) []Decl {
	lines := scanPython(src)
	var decls []Decl
	var scopes []pyScope
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if !l.code {
			continue
		}
		t := strings.TrimSpace(l.text[:l.comment])
		kind, rest := Func, ""
		switch {
		case strings.HasPrefix(t, "def "):
			rest = t[4:]
		case strings.HasPrefix(t, "async def "):
			rest = t[10:]
		case strings.HasPrefix(t, "class "):
			kind, rest = Type, t[6:]
		default:
			continue
		}
		name := pyName(rest)
		if name == "" {
			continue
		}
		for len(scopes) > 0 && (i > scopes[len(scopes)-1].end || l.indent <= scopes[len(scopes)-1].indent) {
			scopes = scopes[:len(scopes)-1]
		}
		if n := len(scopes); n > 0 && !scopes[n-1].class {
			continue // inside a function: an implementation detail
		}
		headEnd := i
		for headEnd+1 < len(lines) && lines[headEnd].depth > 0 {
			headEnd++
		}
		end := pyBodyEnd(lines, i, headEnd)
		d := Decl{Kind: kind, Name: name, Qualified: name, Line: i + 1, End: end + 1,
			Signature: pySignature(lines[i : headEnd+1]), Doc: pyDocstring(lines, headEnd, end)}
		if d.Doc == "" {
			d.Doc = commentAbove(lines, i)
		}
		if n := len(scopes); n > 0 {
			d.Container = scopes[n-1].name
			d.Qualified = scopes[n-1].name + "." + name
		}
		decls = append(decls, d)
		scopes = append(scopes, pyScope{name: d.Qualified, class: kind == Type, indent: l.indent, end: end})
	}
	return decls
}

// pyName is the identifier at the start of s.
func pyName(s string) string {
	end := strings.IndexFunc(s, func(r rune) bool { return !isIdentRune(r) })
	if end < 0 {
		end = len(s)
	}
	return s[:end]
}

// pyBodyEnd is the last line (0-based) of the body of the definition
// whose header runs from line start to headEnd: the last line that is
// not blank nor only a comment before the next statement indented no
// deeper than the header.
func pyBodyEnd(lines []pyLine, start, headEnd int) int {
	base := lines[start].indent
	end := headEnd
	for j := headEnd + 1; j < len(lines); j++ {
		l := lines[j]
		blank := strings.TrimSpace(l.text[:l.comment]) == ""
		if l.code && blank {
			continue
		}
		if l.code && l.indent <= base {
			break
		}
		end = j
	}
	return end
}

// pySignature is a definition's header on one line, without its
// comments and the ':' that ends it.
func pySignature(head []pyLine) string {
	var parts []string
	for _, l := range head {
		parts = append(parts, l.text[:l.comment])
	}
	s := oneLine(strings.Join(parts, " "))
	if i := strings.LastIndex(s, ":"); i >= 0 && strings.TrimSpace(s[i+1:]) == "" {
		s = strings.TrimSpace(s[:i])
	} else if j := pyHeaderColon(s); j > 0 {
		s = strings.TrimSpace(s[:j]) // a one-line body: "def f(): return 1"
	}
	return s
}

// pyHeaderColon is the offset of the ':' that ends a header followed by
// its body on the same line, outside brackets; -1 when there is none.
func pyHeaderColon(s string) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case '"', '\'':
			i = pyStringEnd(s, i)
		case ':':
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// pyDocstring is the docstring of a definition: a string that is the
// first statement of its body, between headEnd and end.
func pyDocstring(lines []pyLine, headEnd, end int) string {
	first := headEnd + 1
	for first <= end && strings.TrimSpace(lines[first].text) == "" {
		first++
	}
	if first > end {
		return ""
	}
	t := strings.TrimSpace(lines[first].text)
	t = strings.TrimLeft(t, "rRuUbB")
	var q string
	switch {
	case strings.HasPrefix(t, `"""`), strings.HasPrefix(t, `'''`):
		q = t[:3]
	case strings.HasPrefix(t, `"`), strings.HasPrefix(t, `'`):
		q = t[:1]
	default:
		return ""
	}
	var doc []string
	body := t[len(q):]
	if len(q) == 1 {
		end = first // a one-line string
	}
	for j := first; j <= end; j++ {
		if j > first {
			body = strings.TrimSpace(lines[j].text)
		}
		if k := strings.Index(body, q); k >= 0 {
			doc = append(doc, body[:k])
			break
		}
		doc = append(doc, body)
	}
	return strings.TrimSpace(strings.Join(doc, "\n"))
}

// commentAbove is the block of '#' comment lines just above line i,
// decorators passed over, markers removed.
func commentAbove(lines []pyLine, i int) string {
	j := i - 1
	for j >= 0 && strings.HasPrefix(strings.TrimSpace(lines[j].text), "@") {
		j--
	}
	var doc []string
	for ; j >= 0; j-- {
		t := strings.TrimSpace(lines[j].text)
		if !strings.HasPrefix(t, "#") || !lines[j].code {
			break
		}
		doc = append(doc, strings.TrimSpace(strings.TrimLeft(t, "#")))
	}
	for a, b := 0, len(doc)-1; a < b; a, b = a+1, b-1 {
		doc[a], doc[b] = doc[b], doc[a]
	}
	return strings.TrimSpace(strings.Join(doc, "\n"))
}

func isIdentRune(r rune) bool {
	return r == '_' || r == '$' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r > 0x7f && isLetterOrDigit(r)
}
