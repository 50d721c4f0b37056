package tools

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/troupe-dev/troupe/builtin/outline"
)

// A query's words are looked for in declarations' bodies as well as in
// their names and doc comments: what a question asks is often done by a
// function whose name says something else (the serve loop that enforces
// a header timeout, not the timeout's accessor). Each line of a file
// belongs to the innermost declaration whose span holds it, so that a
// class's body is what its methods leave.

// bodyMatch is how often each query word occurs in a declaration's own
// lines, and how many lines those are.
type bodyMatch struct {
	tf    []uint16 // per query word; nil when none occurs
	lines int
}

// matchBodies counts the query's words in the own lines of each of
// decls, declared in data, a file in lang. Function words (nameOnly)
// are not counted.
func matchBodies(lang outline.Lang, data []byte, decls []outline.Decl, words []queryWord) []bodyMatch {
	if len(decls) == 0 || len(words) == 0 {
		return nil
	}
	lower := bytes.ToLower(data)
	present := make([]bool, len(words))
	var noUnderscore []byte // lower without '_', made when first needed
	any := false
	for i, w := range words {
		if w.nameOnly {
			continue
		}
		present[i] = bytes.Contains(lower, []byte(w.text))
		if !present[i] && bytes.IndexByte(lower, '_') >= 0 {
			// The word may join parts an identifier separates with
			// '_' ("readheader" in read_header).
			if noUnderscore == nil {
				noUnderscore = bytes.ReplaceAll(lower, []byte("_"), nil)
			}
			present[i] = bytes.Contains(noUnderscore, []byte(w.text))
		}
		any = any || present[i]
	}
	out := make([]bodyMatch, len(decls))
	if !any {
		return out
	}
	lines := bytes.Split(data, []byte("\n"))
	owner := lineOwners(decls)
	leaveOutDocs(owner, lines, decls, lang == outline.Python)
	var tok []byte
	for i, text := range lines {
		if l := i + 1; l < len(owner) && owner[l] >= 0 {
			m := &out[owner[l]]
			m.lines++
			tok = countLine(text, words, present, m, tok)
		}
	}
	return out
}

// leaveOutDocs takes the lines of each declaration's doc comment out of
// the body around it: the comment, annotation and attribute lines right
// above the declaration, and, in Python, the docstring that opens its
// body. They are read from the file, not counted from the doc text,
// which the outline cleans and may take from elsewhere (a Go group's
// comment).
func leaveOutDocs(owner []int, lines [][]byte, decls []outline.Decl, docstrings bool) {
	for _, d := range decls {
		for l := d.Line - 1; l >= 1 && l < len(owner) && l <= len(lines) && isDocLine(lines[l-1]); l-- {
			owner[l] = -1
		}
		if !docstrings {
			continue
		}
		first, last := docstring(lines, d.Line, d.End)
		for l := first; l > 0 && l <= last && l < len(owner); l++ {
			owner[l] = -1
		}
	}
}

// isDocLine reports whether a line is part of a doc comment or of what
// sits between it and its declaration: a comment, an annotation or
// decorator (@Override), an attribute (#[derive(Debug)]).
func isDocLine(line []byte) bool {
	t := bytes.TrimSpace(line)
	for _, p := range []string{"//", "/*", "*", "#", "@"} {
		if bytes.HasPrefix(t, []byte(p)) {
			return true
		}
	}
	return false
}

// docstring is the span of the docstring that opens the body of the
// Python definition on line def (ending by end), or 0, 0: the first
// statement after the header's closing ':', when it is a string in
// triple quotes.
func docstring(lines [][]byte, def, end int) (first, last int) {
	l := def
	for ; l <= min(end, def+20) && l <= len(lines); l++ {
		if bytes.HasSuffix(bytes.TrimSpace(lines[l-1]), []byte(":")) {
			break
		}
	}
	for l++; l <= end && l <= len(lines) && len(bytes.TrimSpace(lines[l-1])) == 0; l++ {
	}
	if l > end || l > len(lines) {
		return 0, 0
	}
	t := bytes.TrimLeft(bytes.TrimSpace(lines[l-1]), "rRbBuUfF")
	var quote []byte
	for _, q := range []string{`"""`, `'''`} {
		if bytes.HasPrefix(t, []byte(q)) {
			quote = []byte(q)
		}
	}
	if quote == nil {
		return 0, 0
	}
	if bytes.Contains(t[3:], quote) {
		return l, l
	}
	for last = l + 1; last <= end && last <= len(lines); last++ {
		if bytes.Contains(lines[last-1], quote) {
			return l, last
		}
	}
	return l, end
}

// lineOwners maps each line (1-based) to the index of the innermost
// declaration whose body holds it, or -1. A body is a declaration's
// lines after its first, which holds its name (leaveOutDocs then takes
// doc comments out).
func lineOwners(decls []outline.Decl) []int {
	last := 0
	for _, d := range decls {
		last = max(last, d.End, d.Line)
	}
	owner := make([]int, last+1)
	for i := range owner {
		owner[i] = -1
	}
	order := make([]int, len(decls))
	for i := range order {
		order[i] = i
	}
	// Widest first, so that an inner declaration takes its lines from
	// the one around it.
	slices.SortStableFunc(order, func(a, b int) int {
		return (decls[b].End - decls[b].Line) - (decls[a].End - decls[a].Line)
	})
	for _, i := range order {
		d := decls[i]
		if d.Line < 1 {
			continue
		}
		owner[d.Line] = -1
		for l := d.Line + 1; l <= d.End; l++ {
			owner[l] = i
		}
	}
	return owner
}

// countLine adds the query words that start a part of one of the line's
// words to m. tok is a buffer, returned for reuse.
func countLine(text []byte, words []queryWord, present []bool, m *bodyMatch, tok []byte) []byte {
	for len(text) > 0 {
		r, size := utf8.DecodeRune(text)
		if !isWordRune(r) {
			text = text[size:]
			continue
		}
		end := size
		for end < len(text) {
			r, n := utf8.DecodeRune(text[end:])
			if !isWordRune(r) {
				break
			}
			end += n
		}
		word := text[:end]
		text = text[end:]
		tok = appendJoined(tok[:0], word)
		var parts []string
		for i, w := range words {
			if !present[i] || !bytes.Contains(tok, []byte(w.text)) {
				continue
			}
			if parts == nil {
				parts = identParts(string(word))
			}
			if partsMatch(parts, w.text) {
				if m.tf == nil {
					m.tf = make([]uint16, len(words))
				}
				if m.tf[i] < math.MaxUint16 {
					m.tf[i]++
				}
			}
		}
	}
	return tok
}

// appendJoined appends word to dst in lower case without underscores,
// as joined does.
func appendJoined(dst, word []byte) []byte {
	for len(word) > 0 {
		c := word[0]
		if c < utf8.RuneSelf {
			if c != '_' {
				if 'A' <= c && c <= 'Z' {
					c += 'a' - 'A'
				}
				dst = append(dst, c)
			}
			word = word[1:]
			continue
		}
		r, n := utf8.DecodeRune(word)
		dst = utf8.AppendRune(dst, unicode.ToLower(r))
		word = word[n:]
	}
	return dst
}

// The relevance of a declaration to a query is BM25 over its fields:
// each word, weighted by how rare it is among the declarations scanned,
// counts most in the name, then in the doc comment, then by how often
// the body uses it, a long body less for each use.
const (
	nameWeight      = 3
	containerWeight = 0.5
	docWeight       = 1.5
	bodyK1          = 1.2
	bodyB           = 0.75
)

// relevance scores the matched declarations, given for each word the
// number of declarations it matches (df) among total.
func relevance(hits []symbolHit, df []int, total int) {
	if len(hits) == 0 {
		return
	}
	idf := make([]float64, len(df))
	for i, n := range df {
		idf[i] = math.Log(1 + (float64(total)-float64(n)+0.5)/(float64(n)+0.5))
	}
	avg := 0.0
	for _, h := range hits {
		avg += float64(h.body.lines)
	}
	avg = max(avg/float64(len(hits)), 1)
	for i := range hits {
		h := &hits[i]
		norm := 1 - bodyB + bodyB*float64(h.body.lines)/avg
		for j := range df {
			var s float64
			switch {
			case h.m.inName[j]:
				s = nameWeight
			case h.m.inDoc[j]:
				s = docWeight
			case h.m.words[j]:
				s = containerWeight
			}
			if h.body.tf != nil && h.body.tf[j] > 0 {
				tf := float64(h.body.tf[j])
				s += tf * (bodyK1 + 1) / (tf + bodyK1*norm)
			}
			h.score += idf[j] * s
		}
	}
}

// sortHits orders the hits by relevance, then by path and line, so
// that equal scores come out the same on every call.
func sortHits(hits []symbolHit) {
	slices.SortFunc(hits, func(a, b symbolHit) int {
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		if c := strings.Compare(a.rel, b.rel); c != 0 {
			return c
		}
		if a.d.Line != b.d.Line {
			return a.d.Line - b.d.Line
		}
		return strings.Compare(a.d.Qualified, b.d.Qualified)
	})
}
