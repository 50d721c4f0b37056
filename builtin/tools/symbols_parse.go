package tools

import (
	"strconv"
	"strings"
)

// Symbol is one declaration as the symbols tool lists it.
type Symbol struct {
	Path      string // relative to the root, with '/'; exact, as QuotePath wrote it
	Line, End int    // 1-based, the declaration's first and last lines
	Kind      string // func, type or value
	Name      string // "(*Server).Shutdown", "Session.request"
	Signature string // the declaration's header on one line
	Doc       string // the first sentence of its doc comment, "" when none
}

// SymbolCounts is what the first line of the symbols tool's output
// says: the declarations scanned, the files they are in, how many match,
// and how many each word of the query matches, in the query's order.
type SymbolCounts struct {
	Declarations, Files, Matches int
	Words                        []WordCount
}

// WordCount is how many declarations a word of the query matches.
type WordCount struct {
	Word  string
	Count int
}

// ParseSymbols reads the symbols tool's output back: the counts of its
// first line, and its declarations. Notes ("... ") are skipped, and so
// is any line that is not a declaration.
func ParseSymbols(out string) (SymbolCounts, []Symbol) {
	lines := strings.Split(out, "\n")
	counts := parseSymbolCounts(lines[0])
	var syms []Symbol
	for _, l := range lines[1:] {
		if s, ok := parseSymbolLine(l); ok {
			syms = append(syms, s)
		}
	}
	return counts, syms
}

// parseSymbolCounts reads "N declarations in F files; M [kind
// declarations] match: word n, word n".
func parseSymbolCounts(l string) SymbolCounts {
	var c SymbolCounts
	head, words, _ := strings.Cut(l, "match: ")
	f := strings.Fields(head)
	if len(f) >= 6 {
		c.Declarations, _ = strconv.Atoi(f[0])
		c.Files, _ = strconv.Atoi(f[3])
		c.Matches, _ = strconv.Atoi(f[5])
	}
	if words == "" {
		return c
	}
	for _, wc := range strings.Split(words, ", ") {
		w, n, ok := strings.Cut(wc, " ")
		if !ok {
			continue
		}
		k, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		c.Words = append(c.Words, WordCount{Word: w, Count: k})
	}
	return c
}

// parseSymbolLine reads "path:start-end kind name signature — doc".
func parseSymbolLine(l string) (Symbol, bool) {
	var s Symbol
	p, rest, ok := unquotePath(l)
	if !ok {
		if strings.HasPrefix(l, `"`) || strings.HasPrefix(l, "... ") {
			return s, false
		}
		if p, rest, ok = strings.Cut(l, ":"); !ok || p == "" {
			return s, false
		}
		rest = ":" + rest
	}
	s.Path = p
	rest, ok = strings.CutPrefix(rest, ":")
	if !ok {
		return s, false
	}
	span, rest, _ := strings.Cut(rest, " ")
	a, b, ok := strings.Cut(span, "-")
	var err1, err2 error
	s.Line, err1 = strconv.Atoi(a)
	s.End, err2 = strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || s.Line < 1 {
		return Symbol{}, false
	}
	s.Kind, rest, _ = strings.Cut(rest, " ")
	if q, after, ok := unquoteName(rest); ok {
		s.Name, rest = q, after
	} else {
		s.Name, rest, _ = strings.Cut(rest, " ")
		rest = " " + rest
	}
	if s.Kind == "" || s.Name == "" {
		return Symbol{}, false
	}
	sig, doc, _ := strings.Cut(rest, " — ")
	s.Signature, s.Doc = strings.TrimSpace(sig), strings.TrimSpace(doc)
	return s, true
}

// unquoteName undoes quoteName at the start of s.
func unquoteName(s string) (name, rest string, ok bool) {
	if !strings.HasPrefix(s, `"`) {
		return "", "", false
	}
	q, err := strconv.QuotedPrefix(s)
	if err != nil {
		return "", "", false
	}
	name, err = strconv.Unquote(q)
	return name, s[len(q):], err == nil
}
