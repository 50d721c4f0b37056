package offline

import (
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/troupe-dev/troupe/builtin/tools"
)

// This file holds what the search takes from the symbols tool, when it
// is offered: one call in the search turn with the question's own
// words, which ranks every declaration of the tree by its name, doc
// comment and body; its best declarations join grep's as candidate
// definitions, with their spans, kinds and doc comments, and its counts
// say how rare each concept is among all the tree's declarations. Its
// order is not the model's: fused with the model's ranking by
// reciprocal rank it gained top-5 locations and lost first places, on
// the tuned set and more on the test set, so the model's own scoring
// ranks what the tool brings.

// toolSymbols is troupe's symbols tool.
const toolSymbols = "symbols"

const (
	// symbolsResults is the symbols call's max_results in the full
	// search; fitSearch scales it with the greps'.
	symbolsResults = 100
	// symbolLineTokens is a symbols line as it comes back: path, span,
	// kind, name, signature and a doc comment's first sentence.
	symbolLineTokens = 60
)

// symbolsQuery is the symbols call's query: for each concept searched,
// its own forms (its word as written when exact, the search form of its
// stem), each once. Not its vocabulary's words: the tool weighs every
// word it is given as the question's own, and a synonym is a guess.
func symbolsQuery(q []qword) string {
	var words []string
	for _, w := range q {
		for _, f := range w.ownForms() {
			if !slices.Contains(words, f) {
				words = append(words, f)
			}
		}
	}
	return strings.Join(words, " ")
}

// symbolForms are the words of the symbols query for w, as the tool
// reads them: lower case, no underscores.
func (w qword) symbolForms() []string {
	var out []string
	add := func(s string) {
		for _, f := range symbolWords(s) {
			if len(out) < maxForms && !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	if w.exact != "" {
		add(w.exact)
	}
	for _, s := range w.stems {
		if s = searchForm(s); len(s) >= 3 {
			add(s)
		}
	}
	return out
}

// symbolWords splits s into words as the symbols tool does: runs of
// letters, digits and '_', lower-cased, '_' removed, of two letters or
// more.
func symbolWords(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if w := strings.ToLower(strings.ReplaceAll(f, "_", "")); utf8.RuneCountInString(w) >= 2 {
			out = append(out, w)
		}
	}
	return out
}

// ownForms are the forms of w's own word in the symbols query: as
// written and by its stem, not its vocabulary's words.
func (w qword) ownForms() []string {
	own := w
	own.stems = w.stems[:min(len(w.stems), 1)]
	return own.symbolForms()
}

// symbolIDF is how rare concept w is among the declarations the symbols
// call scanned, from the counts of its first line: BM25's idf with the
// declarations its own word matches (those of its vocabulary count other
// words). False when no call counted.
func symbolIDF(c tools.SymbolCounts, w qword) (float64, bool) {
	if c.Declarations == 0 {
		return 0, false
	}
	df := 0
	for _, f := range w.ownForms() {
		for _, wc := range c.Words {
			if wc.Word == f {
				df = max(df, wc.Count)
			}
		}
	}
	n := float64(c.Declarations)
	return math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5)), true
}

// symbolCands are the symbols call's declarations as candidate
// definitions: their spans, names, signatures and doc comments known
// before anything is read.
func symbolCands(syms []tools.Symbol) map[string][]*cand {
	byFile := make(map[string][]*cand)
	for i, s := range syms {
		c := &cand{path: s.Path, line: s.Line, end: max(s.End, s.Line), name: memberName(s.Name),
			signature: s.Signature, kind: s.Kind, spanKnown: true, symRank: i + 1}
		if s.Doc != "" {
			c.doc, c.symDoc = []string{s.Doc}, s.Doc
		}
		byFile[s.Path] = append(byFile[s.Path], c)
	}
	return byFile
}

// memberName is the name a member is declared with: "(*Server).Shutdown"
// is Shutdown, "Parser::next_token" next_token.
func memberName(q string) string {
	if i := strings.LastIndexAny(q, ".:"); i >= 0 && i+1 < len(q) {
		return q[i+1:]
	}
	return q
}

// mergeSymbols completes the definitions grep found in one file (sorted
// by line) with what the symbols tool knows of them (span, kind, doc
// comment), and adds the declarations grep did not find whose doc
// comment holds one of the question's own words: grep's definition
// search finds those whose names do, not those whose doc says in words
// what the question asks.
func (r *ranker) mergeSymbols(defs []*cand, syms []*cand) []*cand {
	for _, s := range syms {
		i, found := slices.BinarySearchFunc(defs, s.line, func(c *cand, l int) int { return c.line - l })
		if !found {
			if s.symRank <= symbolsJoin || r.docHoldsOwnWord(s) {
				defs = slices.Insert(defs, i, s)
			}
			continue
		}
		d := defs[i]
		d.end, d.kind, d.spanKnown, d.symDoc = s.end, s.kind, true, s.symDoc
		if len(d.doc) == 0 {
			d.doc = s.doc
		}
		if len(s.signature) > len(d.signature) {
			d.signature = s.signature
		}
	}
	return defs
}

// docHoldsOwnWord reports whether c's doc comment holds one of the
// question's own words (or its stem), not only a vocabulary word.
func (r *ranker) docHoldsOwnWord(c *cand) bool {
	lw := wordsOf(strings.Join(c.doc, " "))
	for _, w := range r.q {
		own := w
		own.stems = w.stems[:min(len(w.stems), 1)]
		if lw.count(own) > 0 {
			return true
		}
	}
	return false
}

// docHolds reports whether a comment line's words are already in doc
// (the symbols tool's first sentence of it), so that they count once.
func docHolds(doc []string, line string) bool {
	text := strings.TrimSpace(commentRe.ReplaceAllString(line, ""))
	return text != "" && strings.Contains(strings.Join(doc, " "), text)
}

// symbolsJoin: the declarations the symbols tool ranks this high are
// candidates even when grep found no line of them.
const symbolsJoin = 10
