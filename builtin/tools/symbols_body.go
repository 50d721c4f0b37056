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
	owner := lineOwners(decls, lang == outline.Python)
	line := 1
	var tok []byte
	for len(data) > 0 {
		nl := bytes.IndexByte(data, '\n')
		text := data
		if nl >= 0 {
			text = data[:nl]
		}
		if line < len(owner) && owner[line] >= 0 {
			m := &out[owner[line]]
			m.lines++
			tok = countLine(text, words, present, m, tok)
		}
		if nl < 0 {
			break
		}
		data = data[nl+1:]
		line++
	}
	return out
}

// lineOwners maps each line (1-based) to the index of the innermost
// declaration whose body holds it, or -1. A body is a declaration's
// lines after its first, which holds its name, less its doc comment:
// the lines above it, which may be inside another declaration (a
// field's, a method's), or below it when docBelow (Python's
// docstrings).
func lineOwners(decls []outline.Decl, docBelow bool) []int {
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
		if d.Doc == "" {
			continue
		}
		n := strings.Count(d.Doc, "\n") + 1
		if docBelow {
			for l := d.Line + 1; l <= min(d.Line+n, d.End); l++ {
				owner[l] = -1
			}
			continue
		}
		for l := d.Line - 1; l >= max(d.Line-n, 1); l-- {
			owner[l] = -1
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
