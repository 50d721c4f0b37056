package offline

import (
	"cmp"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/scanner"
	"go/token"
	"math"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/troupe-dev/troupe/builtin/tools"
)

// This file holds the definition-aware ranking: the question becomes a
// query of concepts (a word, its stem and the code words the vocabulary
// gives for it); grep finds the definitions whose line names a concept and
// the lines where two concepts meet; the best definitions are read, and a
// finding is a definition's span, scored with a field-aware BM25 (name,
// signature, doc comment, body, path).

const (
	maxQueryWords      = 6   // concepts searched with a definitions grep
	defGrepResults     = 150 // max_results of a definitions grep
	pairGrepResults    = 300 // max_results of the grep for two concepts on a line
	commentGrepResults = 200 // max_results of the grep for comments that name a concept
	candReadBefore     = 12  // lines read above a definition (its doc comment)
	candReadLimit      = 90  // lines read per definition
	anchorReadBefore   = 60  // lines read above a line that is in no known definition
	fileReadLimit      = 20  // lines read of a file found by name only
	maxAttach          = 150 // a line belongs to the definition at most this far above it
	maxFindingsFile    = 4   // findings from one file
	maxForms           = 4   // substrings grepped for one concept
	avgBodyLines       = 25  // a body's usual length, for BM25's length normalisation
)

// qword is one concept of the question.
type qword struct {
	text   string   // as the question wrote it
	exact  string   // lower-case text matched as a substring (identifiers, quotes), or ""
	stems  []string // codeStem of the word, then of its vocabulary words
	weight float64
}

// vocabByStem is the vocabulary by the stems of its keys, made on first
// use.
var vocabByStem = sync.OnceValue(func() map[string][]string {
	m := make(map[string][]string)
	for k, vs := range vocabulary() {
		s := codeStem(k)
		for _, v := range vs {
			m[s] = append(m[s], codeStem(v))
		}
	}
	return m
})

// buildQuery turns the task into concepts, most specific first.
func buildQuery(task string, terms []term) []qword {
	var q []qword
	seen := make(map[string]bool)
	add := func(w qword) {
		key := w.exact
		if key == "" && len(w.stems) > 0 {
			key = w.stems[0]
		}
		if key == "" || seen[key] {
			return
		}
		seen[key] = true
		q = append(q, w)
	}
	for _, t := range terms {
		switch t.kind {
		case kindQuoted, kindIdent, kindName:
			w := qword{text: t.text, exact: t.lower, weight: t.weight}
			if t.kind == kindName && !strings.ContainsAny(t.text, " .-/:") {
				w.stems = []string{codeStem(t.lower)}
			}
			add(w)
		}
	}
	for _, span := range tokenSpans(task) {
		m := task[span[0]:span[1]]
		for _, part := range compoundSepRe.Split(m, -1) {
			parts := splitIdent(part)
			for _, p := range parts {
				lw := strings.ToLower(p)
				if utf8.RuneCountInString(lw) < minTermLen || isStopWord(lw) || !hasLetter(lw) {
					continue
				}
				s := codeStem(lw)
				stems := []string{s}
				for _, v := range vocabByStem()[s] {
					if !slices.Contains(stems, v) {
						stems = append(stems, v)
					}
				}
				weight := kindWeight[kindWord]
				if len(parts) > 1 {
					weight = kindWeight[kindPart]
				}
				add(qword{text: lw, stems: stems, weight: weight})
			}
		}
	}
	return q
}

// grepForms are the substrings a grep for w looks for: its text as
// written when exact, then the searchForm of each stem.
func (w qword) grepForms() []string {
	var out []string
	if w.exact != "" {
		out = append(out, regexp.QuoteMeta(w.exact))
	}
	for _, s := range w.stems {
		if s = searchForm(s); len(s) >= 3 {
			out = append(out, regexp.QuoteMeta(s))
		}
	}
	seen := make(map[string]bool)
	uniq := out[:0]
	for _, f := range out {
		if !seen[f] && len(uniq) < maxForms {
			seen[f] = true
			uniq = append(uniq, f)
		}
	}
	return uniq
}

func (w qword) alternation() string {
	return "(?:" + strings.Join(w.grepForms(), "|") + ")"
}

// defPrefix matches the start of a definition line in the languages the
// model knows: keywords (Go, Python, Rust, JS/TS, Java, Kotlin…), C-style
// functions at column 0, shell functions, and methods of JS/TS/Java
// classes.
const defKeywords = `(?:(?:export|default|pub(?:\(\w+\))?|public|private|protected|static|async|abstract|final|override|inline|extern|unsafe)\s+)*` +
	`(?:func|def|class|fn|function|type|interface|struct|enum|trait|impl|module|const|let|var|val)\b`

// defGrepPattern finds definition lines that name w: after a keyword,
// or as the first word of a line followed by "(" and no ";" (C functions,
// shell functions, methods of JS/TS/Java classes). Two branches, each
// with at most maxForms literals, so that the grep tool's literal
// prefilter (at most 8) applies and the regular expression runs only on
// the lines that hold one.
func defGrepPattern(w qword) string {
	a := w.alternation()
	return `(?i)^\s*` + defKeywords + `.*` + a +
		`|^(?:[A-Za-z_][\w \t\*]*?\b|\s+(?:(?:public|private|protected|static|async|override)\s+)*)\w*` + a + `\w*\s*(?:<[^>]*>)?\([^;]*$`
}

// pairGrepPattern finds lines where the concepts occur twice: the first
// form of each, then vocabulary forms, at most 8 literals in all.
func pairGrepPattern(q []qword) string {
	var forms []string
	for pass := 0; pass < maxForms && len(forms) < 8; pass++ {
		for _, w := range q {
			if f := w.grepForms(); pass < len(f) && len(forms) < 8 && !slices.Contains(forms, f[pass]) {
				forms = append(forms, f[pass])
			}
		}
	}
	if len(forms) < 2 {
		return ""
	}
	a := "(?:" + strings.Join(forms, "|") + ")"
	return "(?i)" + a + ".*" + a
}

// commentGrepPattern finds comment lines that name a concept: doc
// comments say in words what an identifier does.
func commentGrepPattern(q []qword) string {
	var forms []string
	for pass := 0; pass < maxForms && len(forms) < 8; pass++ {
		for _, w := range q {
			if f := w.grepForms(); pass < len(f) && len(forms) < 8 && !slices.Contains(forms, f[pass]) {
				forms = append(forms, f[pass])
			}
		}
	}
	if len(forms) == 0 {
		return ""
	}
	return `(?i)^\s*(?://|#|\*|/\*|""")\s?\w.*(?:` + strings.Join(forms, "|") + ")"
}

// lineWords are the stems of the identifier parts of a line, and the line
// in lower case.
type lineWords struct {
	lower string
	stems map[string]int // stem → occurrences
}

var (
	// errorLineRe matches a line that raises an error: its message says
	// in words what failed, as a question asks it.
	errorLineRe = lazyRE(`\b(?:raise|throw|panic)\b|Errorf?\(|errors\.New\(`)
	stringRe    = lazyRE("\"(?:[^\"\\\\]|\\\\.)*\"|`[^`]*`")
)

func wordsOf(text string) lineWords {
	lw := lineWords{lower: strings.ToLower(text), stems: make(map[string]int)}
	// Words inside string literals are prose, often the question's own
	// (an example, a message); they count only through exact matches.
	// (Python docstrings stay: they are doc; so do the messages of the
	// errors a line raises, which say what failed.)
	prose := text
	if !strings.Contains(text, `"""`) && !errorLineRe.MatchString(text) {
		prose = stringRe.ReplaceAllString(text, `""`)
	}
	for _, tok := range wordsIn(prose) {
		for _, p := range splitIdent(tok) {
			p = strings.ToLower(strings.TrimFunc(p, unicode.IsDigit))
			if len(p) >= 2 {
				lw.stems[codeStem(p)]++
			}
		}
	}
	return lw
}

// vocabWeight is what a vocabulary word's occurrence counts for beside
// one of the question's own words: it is only a guess at what the code
// calls the concept.
const vocabWeight = 0.5

// count is how often w occurs in the words.
func (lw lineWords) count(w qword) float64 {
	if w.exact != "" && strings.Contains(lw.lower, w.exact) {
		return float64(max(1, strings.Count(lw.lower, w.exact)))
	}
	n := 0.0
	for i, s := range w.stems {
		c := lw.stems[s]
		if c == 0 && len(s) >= 5 {
			for st, k := range lw.stems {
				if len(st) > len(s) && strings.HasPrefix(st, s) {
					c += k
				}
			}
		}
		if i > 0 {
			n += vocabWeight * float64(min(c, 1)) // a vocabulary word counts once
			continue
		}
		n += float64(c)
	}
	return n
}

var (
	// defNames find the name a line defines. A line can hold one only if
	// it holds one of its needs (none: any line), which is checked first:
	// most lines hold none.
	defNames = []struct {
		name  func(string) string
		needs []string
	}{
		{name: declaredName},
		{name: assignedName, needs: []string{":="}},
		{name: structName, needs: []string{"struct", "interface"}},
		{name: macroName, needs: []string{"define"}},
	}
	commentRe = lazyRE(`^\s*(?://|#|/\*|\*|--|;;|<!--)`)
)

// defName returns the name a line defines, or "". A Rust impl block
// defines nothing of its own: its functions are the definitions, each
// found by its own line, so that a question about one is not answered by
// the block that holds them all.
func defName(text string) string {
	for _, d := range defNames {
		if len(d.needs) > 0 && !slices.ContainsFunc(d.needs, func(n string) bool { return strings.Contains(text, n) }) {
			continue
		}
		if name := d.name(text); name != "" {
			return name
		}
	}
	return ""
}

// defLine describes a definition line: its name, or "" if it is none.
var (
	cFuncRe     = lazyRE(`^[A-Za-z_][\w \t\*]*?\b([A-Za-z_]\w*)\s*\([^;]*$`)
	shellFuncRe = lazyRE(`^\s*(?:function\s+)?([A-Za-z_][\w-]*)\s*\(\)\s*\{?`)
	methodRe    = lazyRE(`^\s+(?:(?:public|private|protected|static|async|get|set|override|final|synchronized)\s+)*(?:[\w<>\[\],]+\s+)?([A-Za-z_$][\w$]*)\s*(?:<[^>]*>)?\([^;]*\)[^;]*\{\s*$`)
	arrowRe     = lazyRE(`^\s*(?:export\s+)?(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*(?::[^=]+)?=\s*(?:async\s+)?(?:\([^)]*\)|[A-Za-z_$][\w$]*)\s*(?::[^=]+)?=>`)
	controlRe   = lazyRE(`^\s*(?:if|for|while|switch|return|else|catch|case|do|try|elif|with|sizeof|defer|go)\b`)
)

// defNameOf returns the name a line of file p defines, or "".
func defNameOf(p, text string) string {
	if strings.TrimSpace(text) == "" || commentRe.MatchString(text) || controlRe.MatchString(text) {
		return ""
	}
	ext := path.Ext(p)
	if ext == ".go" {
		if name := goFuncName(text); name != "" {
			return name
		}
	}
	if m := arrowRe.FindStringSubmatch(text); m != nil {
		if localVariable(text) {
			return "" // a closure is part of the function it is in
		}
		return m[1]
	}
	if name := defName(text); name != "" {
		if strings.Contains(text, ":=") || localVariable(text) {
			return "" // a local variable is no definition worth a finding
		}
		return name
	}
	switch ext {
	case ".c", ".h", ".cc", ".cpp", ".hpp", ".cxx":
		if m := cFuncRe.FindStringSubmatch(text); m != nil && !strings.HasSuffix(strings.TrimSpace(text), ";") {
			return m[1]
		}
	case ".sh", ".bash", ".zsh", "":
		if m := shellFuncRe.FindStringSubmatch(text); m != nil {
			return m[1]
		}
	case ".ts", ".tsx", ".js", ".jsx", ".mjs", ".java", ".kt", ".cs", ".scala", ".swift":
		if m := methodRe.FindStringSubmatch(text); m != nil {
			return m[1]
		}
	}
	return ""
}

// localVariable reports whether a line declares a variable inside a
// body: an indented var or const (Go, JavaScript, TypeScript) or let
// (JavaScript, TypeScript, Rust), an arrow function bound to a local
// name among them: its lines are the body of the function it is in.
func localVariable(text string) bool {
	if text == strings.TrimLeft(text, " \t") {
		return false
	}
	t := strings.TrimSpace(text)
	return strings.HasPrefix(t, "var ") || strings.HasPrefix(t, "const ") || strings.HasPrefix(t, "let ")
}

// cand is a definition (or, before it is read, a line in no known
// definition) that may answer the question.
type cand struct {
	path      string
	line      int    // the definition's first line
	name      string // "" for an anchor not yet resolved to a definition
	signature string
	end       int
	snippet   string
	doc       []string
	body      []hit // lines inside, from grep or read
	read      bool
	comment   bool // an anchor on a comment: the definition is below it
	file      bool // a file found by its name only: no line of it matched
	// kind is the symbols tool's kind (func, type, value), and spanKnown
	// says that it gave the span: end is the definition's last line.
	kind      string
	spanKnown bool
	// symRank is a symbols declaration's place in the tool's ranking,
	// from 1 (what decides whether it joins grep's definitions); 0 for
	// the rest.
	symRank int
	// symDoc is the first sentence of the doc comment, as the symbols
	// tool gave it.
	symDoc string
	score  float64
}

// ranker ranks definitions for a query.
type ranker struct {
	q   []qword
	idf []float64
	// askTests and the like say the question asks for what is otherwise
	// ranked lower.
	askTests, askDocs, askExamples bool
	words                          map[string]lineWords // wordsOf, by line
}

// wordsOf is wordsOf, remembered: the same lines are scored many times.
func (r *ranker) wordsOf(text string) lineWords {
	if lw, ok := r.words[text]; ok {
		return lw
	}
	lw := wordsOf(text)
	if r.words == nil {
		r.words = make(map[string]lineWords)
	}
	r.words[text] = lw
	return lw
}

func newRanker(task string, terms []term) *ranker {
	r := &ranker{q: buildQuery(task, terms)}
	// Whole words only: "latest" asks for no test, nor "docker" for docs.
	for _, w := range strings.FieldsFunc(strings.ToLower(task), func(c rune) bool { return !unicode.IsLetter(c) && !unicode.IsDigit(c) }) {
		switch w {
		case "test", "tests", "testing", "tested", "spec", "specs", "unittest", "unittests":
			r.askTests = true
		case "doc", "docs", "documentation", "documented", "document", "readme", "godoc", "manual":
			r.askDocs = true
		case "example", "examples", "sample", "samples":
			r.askExamples = true
		}
	}
	return r
}

// searchQuery is the part of the query searched with definitions greps.
func (r *ranker) searchQuery() []qword {
	return r.q[:min(len(r.q), maxQueryWords)]
}

// computeIDF weighs each concept by how rare it is among the grep hits,
// and, when the symbols tool counted them, among the tree's declarations.
func (r *ranker) computeIDF(lines []lineWords, sc tools.SymbolCounts) {
	r.idf = make([]float64, len(r.q))
	n := float64(len(lines))
	for i, w := range r.q {
		df := 0
		for _, lw := range lines {
			if lw.count(w) > 0 {
				df++
			}
		}
		r.idf[i] = math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5))
		if sidf, ok := symbolIDF(sc, w); ok && i < maxQueryWords {
			// Among all the declarations of the tree too, not only
			// among the lines the search found.
			r.idf[i] = (r.idf[i] + sidf) / 2
		}
		r.idf[i] += 0.2
		r.idf[i] *= w.weight / kindWeight[kindWord]
	}
}

// pathMult lowers tests, docs, examples, generated and vendored files
// unless the question asks for them.
func (r *ranker) pathMult(p string) float64 {
	lp := "/" + strings.ToLower(p)
	base := path.Base(lp)
	stem := strings.TrimSuffix(base, path.Ext(base))
	mult := 1.0
	switch {
	case strings.Contains(lp, "/vendor/"), strings.Contains(lp, "/node_modules/"), strings.Contains(lp, "/third_party/"):
		mult *= 0.5
	case strings.Contains(lp, "/testdata/"), strings.Contains(lp, "/fixtures/"):
		mult *= 0.5
	}
	if !r.askTests && (strings.HasSuffix(base, "_test.go") || strings.HasPrefix(base, "test_") ||
		strings.Contains(base, ".test.") || strings.Contains(base, ".spec.") || strings.HasSuffix(stem, "_test") ||
		strings.Contains(lp, "/test/") || strings.Contains(lp, "/tests/") || strings.Contains(lp, "/__tests__/")) {
		mult *= 0.25
	}
	if !r.askDocs {
		switch path.Ext(base) {
		case ".md", ".markdown", ".rst", ".txt", ".adoc":
			mult *= 0.5
		}
		if strings.Contains(lp, "/docs/") || strings.Contains(lp, "/doc/") {
			mult *= 0.7
		}
	}
	if !r.askExamples && (strings.Contains(lp, "/example") || strings.HasPrefix(base, "example")) {
		mult *= 0.6
	}
	// Another platform's variant comes after the Unix one or the
	// portable one.
	for _, osName := range []string{"_windows", "_plan9", "_wasm", "_js", "_wasip1", "_darwin", "_ios", "_android", "_solaris", "_aix", "_openbsd", "_netbsd", "_freebsd", "_dragonfly", "_illumos", "_zos"} {
		if strings.HasSuffix(stem, osName) || strings.Contains(stem, osName+"_") {
			mult *= 0.7
			break
		}
	}
	if strings.HasSuffix(base, ".pb.go") || strings.HasSuffix(stem, "_bundle") || strings.HasSuffix(stem, "_gen") ||
		strings.HasSuffix(stem, "_generated") || strings.HasPrefix(base, "zz_generated") || strings.HasPrefix(base, "z") && strings.HasSuffix(base, ".go") && strings.Contains(base, "tables") {
		mult *= 0.5
	}
	return mult
}

// fieldScore is the BM25-like score of a field's words.
func (r *ranker) fieldScore(lw lineWords, weight, k float64) (float64, []bool) {
	var s float64
	hit := make([]bool, len(r.q))
	for i, w := range r.q {
		if c := lw.count(w); c > 0 {
			tf := c
			s += r.idf[i] * weight * tf * (k + 1) / (tf + k)
			hit[i] = true
		}
	}
	return s, hit
}

// scoreCand scores a candidate from its fields.
func (r *ranker) scoreCand(c *cand) float64 {
	var total float64
	covered := make([]bool, len(r.q))
	mark := func(h []bool) {
		for i, b := range h {
			covered[i] = covered[i] || b
		}
	}
	name := wordsOf(strings.Join(splitIdent(c.name), " "))
	s, h := r.fieldScore(name, 3, 0.5)
	total += s
	mark(h)
	// A name made of several of the concepts says most: count the parts
	// of the name that are concepts.
	inName := 0
	for _, part := range splitIdent(c.name) {
		pw := r.wordsOf(part)
		if slices.ContainsFunc(r.q, func(w qword) bool { return w.exact == "" && pw.count(w) > 0 }) {
			inName++
		}
	}
	if inName >= 2 {
		total += s * 0.5 * float64(inName-1)
	}
	if c.name != "" {
		for i, w := range r.q {
			if w.exact != "" && strings.ToLower(c.name) == strings.ReplaceAll(w.exact, "_", "") {
				total += 3 * r.idf[i]
			}
		}
	}
	s, h = r.fieldScore(wordsOf(c.signature), 1, 0.5)
	total += s
	mark(h)
	s, h = r.fieldScore(wordsOf(strings.Join(c.doc, " ")), 1.5, 1)
	total += s
	mark(h)
	body := lineWords{stems: make(map[string]int)}
	var lower strings.Builder
	for _, b := range c.body {
		lw := r.wordsOf(b.text)
		for st, n := range lw.stems {
			body.stems[st] += n
		}
		lower.WriteString(lw.lower)
		lower.WriteByte('\n')
	}
	body.lower = lower.String()
	// BM25's length normalisation: a long body holds more words by
	// chance.
	s, h = r.fieldScore(body, 1, 1.2*(0.5+0.5*float64(len(c.body))/avgBodyLines))
	total += 0.8 * s
	mark(h)
	s, h = r.fieldScore(wordsOf(strings.NewReplacer("/", " ", ".", " ", "_", " ", "-", " ").Replace(c.path)), 0.8, 0.5)
	total += s
	mark(h)
	n := 0
	for _, b := range covered {
		if b {
			n++
		}
	}
	if len(r.q) > 0 {
		total *= 0.5 + float64(n)/float64(len(r.q))
	}
	if c.name == "" {
		total *= 0.5
	}
	return total * r.pathMult(c.path) * r.kindMult(c)
}

// kindMult prefers functions, whose bodies do the work, over types, and
// types over variables and constants, unless the question names the
// definition.
func (r *ranker) kindMult(c *cand) float64 {
	ln := strings.ToLower(c.name)
	for _, w := range r.q {
		if w.exact != "" && ln == strings.ReplaceAll(w.exact, "_", "") {
			return 1
		}
	}
	switch c.kind { // as the symbols tool says
	case "value":
		return 0.6
	case "type":
		return 0.8
	}
	sig := c.signature
	for _, mod := range []string{"export ", "default ", "pub ", "public ", "private ", "protected ", "static ", "abstract ", "final "} {
		sig = strings.TrimPrefix(sig, mod)
	}
	switch {
	case arrowRe.MatchString(c.signature):
		return 1
	case strings.HasPrefix(sig, "var "), strings.HasPrefix(sig, "const "), strings.HasPrefix(sig, "let "), strings.HasPrefix(sig, "val "):
		return 0.6
	case strings.HasPrefix(sig, "type "), strings.HasPrefix(sig, "class "), strings.HasPrefix(sig, "struct "),
		strings.HasPrefix(sig, "interface "), strings.HasPrefix(sig, "enum "), strings.HasPrefix(sig, "trait "):
		return 0.8
	}
	return 1
}

// candidates builds the definitions from grep hits and the symbols
// tool's declarations: each definition line is one; every other line
// joins the definition above it (its body) or, for a comment, the one
// below it (its doc); a line in none becomes an anchor, resolved when
// read. When neither found anything, the files glob found by name are
// the candidates.
func (r *ranker) candidates(ev evidence) []*cand {
	byFile := make(map[string][]hit)
	seen := make(map[string]bool)
	for _, h := range ev.grep {
		key := h.path + "\x00" + strconv.Itoa(h.line)
		if seen[key] {
			continue
		}
		seen[key] = true
		byFile[h.path] = append(byFile[h.path], h)
	}
	var lines []lineWords
	for _, hs := range byFile {
		for _, h := range hs {
			lines = append(lines, r.wordsOf(h.text))
		}
	}
	r.computeIDF(lines, ev.symCounts)
	syms := symbolCands(ev.syms)
	var out []*cand
	for _, p := range sortedKeys(syms) {
		if _, ok := byFile[p]; !ok {
			byFile[p] = nil
		}
	}
	for _, p := range sortedKeys(byFile) {
		out = append(out, r.fileCands(p, byFile[p], syms[p])...)
	}
	if len(out) == 0 {
		out = fileCandidates(ev.glob)
	}
	for _, c := range out {
		c.score = r.scoreCand(c)
	}
	sortCands(out)
	return out
}

// fileCands are the definitions and anchors of one file: its grep hits
// hs, and its declarations syms.
func (r *ranker) fileCands(p string, hs []hit, syms []*cand) []*cand {
	slices.SortFunc(hs, func(a, b hit) int { return a.line - b.line })
	var defs []*cand
	for _, h := range hs {
		if name := defNameOf(p, h.text); name != "" {
			defs = append(defs, &cand{path: p, line: h.line, name: name, signature: signature(h.text), end: h.line})
		}
	}
	defs = r.mergeSymbols(defs, syms)
	byLine := func(c *cand, l int) int { return c.line - l }
	var anchors []*cand
	for _, h := range hs {
		i, found := slices.BinarySearchFunc(defs, h.line, byLine)
		if found {
			continue
		}
		if commentRe.MatchString(h.text) && i < len(defs) && defs[i].line-h.line <= 15 {
			if !defs[i].spanKnown || !docHolds(defs[i].doc, h.text) {
				defs[i].doc = append(defs[i].doc, h.text)
			}
			continue
		}
		if commentRe.MatchString(h.text) && (i == 0 || h.line-defs[i-1].line > 3) {
			// Most likely the doc comment of a definition below that
			// does not name the concept: resolved when read.
			if n := len(anchors); n > 0 && anchors[n-1].comment && h.line-anchors[n-1].body[len(anchors[n-1].body)-1].line <= 2 {
				anchors[n-1].body = append(anchors[n-1].body, h)
				continue
			}
			anchors = append(anchors, &cand{path: p, line: h.line, end: h.line, body: []hit{h}, comment: true})
			continue
		}
		if d := enclosing(defs[:i], h.line); d != nil {
			d.body = append(d.body, h)
			continue
		}
		if n := len(anchors); n > 0 && !anchors[n-1].comment && h.line-anchors[n-1].line <= 40 {
			anchors[n-1].body = append(anchors[n-1].body, h)
			continue
		}
		anchors = append(anchors, &cand{path: p, line: h.line, end: h.line, body: []hit{h}})
	}
	return append(defs, anchors...)
}

// enclosing is the definition of defs (those starting above line l, by
// line) whose body holds line l: the innermost whose known span holds
// it, or else the last one, when its span is not known and it starts at
// most maxAttach lines above.
func enclosing(defs []*cand, l int) *cand {
	for i := len(defs) - 1; i >= 0; i-- {
		d := defs[i]
		switch {
		case d.spanKnown && l <= d.end:
			return d
		case !d.spanKnown:
			if i == len(defs)-1 && l-d.line <= maxAttach {
				return d
			}
			return nil
		}
	}
	return nil
}

// fileCandidates are the files found by name, one candidate each, at
// their first line.
func fileCandidates(paths []string) []*cand {
	var out []*cand
	seen := make(map[string]bool)
	for _, p := range paths {
		if !seen[p] {
			seen[p] = true
			out = append(out, &cand{path: p, line: 1, end: 1, file: true})
		}
	}
	return out
}

func sortCands(cs []*cand) {
	slices.SortStableFunc(cs, func(a, b *cand) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		if c := strings.Compare(a.path, b.path); c != 0 {
			return c
		}
		return a.line - b.line
	})
}

// readPlan is the definitions to read: offset and limit per candidate,
// best first.
type readReq struct {
	path          string
	offset, limit int
}

// At most n reads; the plan for fewer is a prefix of the plan for more.
func readPlan(cs []*cand, n int) []readReq {
	var out []readReq
	for _, c := range cs {
		if len(out) == n || c.score <= 0 {
			break
		}
		before, limit := candReadBefore, candReadLimit
		switch {
		case c.comment:
			before, limit = 2, candReadLimit
		case c.file:
			before, limit = 0, fileReadLimit
		case c.name == "":
			before, limit = anchorReadBefore, anchorReadBefore+30
		}
		req := readReq{path: c.path, offset: max(1, c.line-before), limit: limit}
		if slices.ContainsFunc(out, func(o readReq) bool {
			return o.path == req.path && o.offset <= c.line && c.line < o.offset+o.limit-20
		}) {
			continue
		}
		out = append(out, req)
	}
	return out
}

// resolve completes the candidates with what was read: the enclosing
// definition of an anchor, each definition's span, doc comment and body.
func (r *ranker) resolve(cs []*cand, reads map[string][]hit) []*cand {
	byLine := linesByPath(reads)
	seen := make(map[string]*cand)
	var out []*cand
	for _, c := range cs {
		lines := byLine[c.path]
		if lines == nil {
			if c.name != "" || len(out) < maxFindings {
				out = append(out, c)
			}
			continue
		}
		if _, ok := lines[c.line]; !ok {
			out = append(out, c)
			continue
		}
		if c.file {
			c.body = firstLine(c.path, lines)
		} else {
			c.findDefinition(lines)
		}
		key := c.path + "\x00" + strconv.Itoa(c.line)
		if prev := seen[key]; prev != nil {
			prev.body = append(prev.body, c.body...)
			continue
		}
		seen[key] = c
		c.read = true
		if c.name != "" {
			c.readSpan(lines)
		}
		out = append(out, c)
	}
	out = mergeOverloads(out, byLine)
	for _, c := range out {
		c.score = r.scoreCand(c)
		if c.read {
			c.snippet = r.bestBodyLine(c)
		}
	}
	sortCands(out)
	return out
}

// linesByPath indexes the lines read by path and line number.
func linesByPath(reads map[string][]hit) map[string]map[int]string {
	byLine := make(map[string]map[int]string)
	for p, hs := range reads {
		m := make(map[int]string, len(hs))
		for _, h := range hs {
			m[h.line] = h.text
		}
		byLine[p] = m
	}
	return byLine
}

// firstLine is the first line read that is not blank, as a body of one
// line, or none.
func firstLine(p string, lines map[int]string) []hit {
	for l := 1; hasLine(lines, l); l++ {
		if strings.TrimSpace(lines[l]) != "" {
			return []hit{{path: p, line: l, text: lines[l]}}
		}
	}
	return nil
}

// findDefinition moves an anchor to the definition it stands for in the
// lines read, and leaves it where it is when they show none.
func (c *cand) findDefinition(lines map[int]string) {
	if c.comment {
		// The definition below the comment block, if any.
		for l := c.line; l <= c.line+30; l++ {
			text, ok := lines[l]
			if !ok || !commentRe.MatchString(text) {
				if name := defNameOf(c.path, text); ok && name != "" {
					c.name, c.line, c.signature = name, l, signature(text)
				}
				break
			}
		}
	}
	if c.name == "" {
		// Find the definition the line is in.
		for l := c.line; l >= c.line-anchorReadBefore; l-- {
			text, ok := lines[l]
			if !ok {
				break
			}
			if name := defNameOf(c.path, text); name != "" {
				c.name, c.line, c.signature = name, l, signature(text)
				break
			}
		}
	}
}

// readSpan sets the definition's end, doc comment and body from the lines
// read, in place of the lines grep found. A Go function's signature is
// printed whole, however many lines it spans, and the lines of its
// multi-line string literals stay out of the body, as data.
func (c *cand) readSpan(lines map[int]string) {
	if !c.spanKnown {
		// The symbols tool's span, one line or more, is the parser's
		// reading of the whole file; the lines read are only part of it.
		c.end = spanEnd(c.path, lines, c.line)
	}
	if doc := docAbove(lines, c.line); len(doc) > 0 || !c.spanKnown {
		if c.docCut(lines, doc) {
			// The read began inside a long doc comment: its start, which
			// the symbols tool gave, says most.
			doc = append([]string{c.symDoc}, doc...)
		}
		c.doc = doc
	}
	c.body = c.body[:0]
	var data map[int]bool
	if path.Ext(c.path) == ".go" {
		data = goStringLines(lines, c.line, c.end)
		if sig := goSignature(lines, c.line, c.end); sig != "" {
			c.signature = sig
		}
	}
	for l := c.line + 1; l <= c.end; l++ {
		if text, ok := lines[l]; ok && !data[l] {
			c.body = append(c.body, hit{path: c.path, line: l, text: text})
		}
	}
}

// bestBodyLine is the line of the body that does the most of the work
// the question asks about: the most concepts, else the first statement.
func (r *ranker) bestBodyLine(c *cand) string {
	best, bestScore := "", 0.0
	first := ""
	for _, h := range c.body {
		t := strings.TrimSpace(h.text)
		if t == "" || commentRe.MatchString(h.text) || t == "}" || t == "{" || t == ")" {
			continue
		}
		if first == "" && len(t) >= 12 {
			first = t // a statement, not "switch {"
		}
		s, _ := r.fieldScore(r.wordsOf(h.text), 1, 0.5)
		if s > bestScore {
			best, bestScore = t, s
		}
	}
	if best == "" {
		best = first
	}
	return best
}

// signature is a definition line without its opening brace or colon.
func signature(text string) string {
	s := strings.TrimSpace(text)
	s = strings.TrimSpace(strings.TrimSuffix(s, "{"))
	if i := strings.Index(s, " { "); i > 0 && strings.HasSuffix(s, "}") && !strings.Contains(s[:i], "=") {
		s = s[:i] // a one-line function: its signature only
	}
	if strings.HasPrefix(s, "def ") || strings.HasPrefix(s, "class ") || strings.HasPrefix(s, "async def ") {
		s = strings.TrimSuffix(s, ":")
	}
	return s
}

// docCut reports whether doc, the comment read above c, is the end of a
// longer one whose start was not read, and the symbols tool gave that
// start: the lines read begin with the comment, and its first words are
// not those of the symbols tool's first sentence.
func (c *cand) docCut(lines map[int]string, doc []string) bool {
	if c.symDoc == "" || len(doc) == 0 || hasLine(lines, c.line-len(doc)-1) {
		return false
	}
	words := strings.Fields(c.symDoc)
	head := strings.Join(strings.Fields(strings.Join(doc[:min(2, len(doc))], " ")), " ")
	return !strings.Contains(head, strings.Join(words[:min(3, len(words))], " "))
}

// docAbove is the comment block just above line l.
func docAbove(lines map[int]string, l int) []string {
	var doc []string
	for k := l - 1; k > 0 && k >= l-30; k-- {
		text, ok := lines[k]
		if !ok || !commentRe.MatchString(text) {
			break
		}
		doc = append(doc, text)
	}
	slices.Reverse(doc)
	return doc
}

// spanEnd is the last line of the definition at line start, as far as
// the lines read show: Go by its tokens, Python by indentation, the rest
// by braces.
func spanEnd(p string, lines map[int]string, start int) int {
	last := start
	for hasLine(lines, last+1) {
		last++
	}
	switch path.Ext(p) {
	case ".go":
		return goSpanEnd(lines, start, last)
	case ".py":
		return indentSpanEnd(lines, start, last)
	}
	return braceSpanEnd(p, lines, start, last)
}

func hasLine(lines map[int]string, l int) bool {
	_, ok := lines[l]
	return ok
}

func goSpanEnd(lines map[int]string, start, last int) int {
	var src strings.Builder
	for l := start; l <= last; l++ {
		src.WriteString(lines[l])
		src.WriteByte('\n')
	}
	fset := token.NewFileSet()
	file := fset.AddFile("", -1, src.Len())
	var s scanner.Scanner
	s.Init(file, []byte(src.String()), nil, 0)
	depth, opened := 0, false
	for {
		pos, tok, _ := s.Scan()
		switch tok {
		case token.EOF:
			return last
		case token.LBRACE, token.LPAREN, token.LBRACK:
			if tok == token.LBRACE {
				opened = true
			}
			depth++
		case token.RBRACE, token.RPAREN, token.RBRACK:
			depth--
			if depth == 0 && opened && tok == token.RBRACE {
				return start + file.Line(pos) - 1
			}
		case token.SEMICOLON:
			if depth == 0 && !opened {
				return start + file.Line(pos) - 1 // type T int, a one-line definition
			}
		}
	}
}

// goSignature parses a Go function with go/parser and prints its
// signature on one line, however many lines it spans in the source; ""
// when the lines are no complete function.
func goSignature(lines map[int]string, start, end int) string {
	if !strings.HasPrefix(lines[start], "func") {
		return ""
	}
	var src strings.Builder
	src.WriteString("package p\n")
	for l := start; l <= end; l++ {
		src.WriteString(lines[l])
		src.WriteByte('\n')
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src.String(), parser.SkipObjectResolution)
	if err != nil || len(f.Decls) != 1 {
		return ""
	}
	fd, ok := f.Decls[0].(*ast.FuncDecl)
	if !ok {
		return ""
	}
	fd.Body = nil
	var b strings.Builder
	if err := printer.Fprint(&b, fset, fd); err != nil {
		return ""
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// goStringLines are the lines from start to end that lie inside a string
// literal of several lines: data (a table, a template), not code.
func goStringLines(lines map[int]string, start, end int) map[int]bool {
	var src strings.Builder
	for l := start; l <= end; l++ {
		src.WriteString(lines[l])
		src.WriteByte('\n')
	}
	fset := token.NewFileSet()
	file := fset.AddFile("", -1, src.Len())
	var sc scanner.Scanner
	sc.Init(file, []byte(src.String()), nil, 0)
	var data map[int]bool
	for {
		pos, tok, lit := sc.Scan()
		if tok == token.EOF {
			return data
		}
		if tok == token.STRING && strings.Contains(lit, "\n") {
			first := file.Line(pos)
			for k := first + 1; k <= first+strings.Count(lit, "\n"); k++ {
				if data == nil {
					data = make(map[int]bool)
				}
				data[start+k-1] = true
			}
		}
	}
}

func indentSpanEnd(lines map[int]string, start, last int) int {
	indent := func(s string) int { return len(s) - len(strings.TrimLeft(s, " \t")) }
	base := indent(lines[start])
	end, depth := start, parenDepth(lines[start])
	for l := start + 1; l <= last; l++ {
		t := lines[l]
		if strings.TrimSpace(t) == "" {
			continue
		}
		if depth <= 0 && indent(t) <= base {
			break
		}
		depth += parenDepth(t)
		end = l
	}
	return end
}

// parenDepth is how many more brackets a line opens than it closes,
// outside strings and comments.
func parenDepth(line string) int {
	d, inStr := 0, rune(0)
	for _, ch := range line {
		switch {
		case inStr != 0:
			if ch == inStr {
				inStr = 0
			}
		case ch == '"' || ch == '\'':
			inStr = ch
		case ch == '#':
			return d
		case ch == '(' || ch == '[' || ch == '{':
			d++
		case ch == ')' || ch == ']' || ch == '}':
			d--
		}
	}
	return d
}

// braceSpanEnd is where the braces opened on or after line start close,
// with the braces in strings, character literals and comments passed over
// (// and /* */ comments, or # ones in shell scripts); the line of a ';'
// outside brackets before any body opens (a type alias, a field, a
// prototype); start itself when no body opens within a few lines (a
// declaration).
func braceSpanEnd(p string, lines map[int]string, start, last int) int {
	hash := false
	switch path.Ext(p) {
	case ".sh", ".bash", ".zsh", ".ksh":
		hash = true
	}
	depth, opened, inBlock, brackets := 0, false, false, 0
	for l := start; l <= last; l++ {
		line := lines[l]
		inStr := byte(0)
	scan:
		for i := 0; i < len(line); i++ {
			ch := line[i]
			switch {
			case inBlock:
				if ch == '*' && i+1 < len(line) && line[i+1] == '/' {
					inBlock = false
					i++
				}
			case inStr != 0:
				if ch == '\\' {
					i++
				} else if ch == inStr {
					inStr = 0
				}
			case !hash && ch == '/' && i+1 < len(line) && line[i+1] == '/':
				break scan
			case !hash && ch == '/' && i+1 < len(line) && line[i+1] == '*':
				inBlock = true
				i++
			case hash && ch == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
				break scan
			case ch == '\'':
				// A character literal ('x', '\n', '\u{1F600}'); otherwise a
				// Rust lifetime or an apostrophe, which opens nothing.
				if j := charLiteralEnd(line, i); j > i {
					i = j
				} else if hash {
					inStr = ch
				}
			case ch == '"' || ch == '`':
				inStr = ch
			case ch == '(' || ch == '[':
				brackets++
			case ch == ')' || ch == ']':
				brackets--
			case ch == ';' && !hash && !opened && brackets <= 0:
				return l
			case ch == '{':
				depth++
				opened = true
			case ch == '}':
				depth--
				if opened && depth == 0 {
					return l
				}
			}
		}
		if !opened && l > start+3 {
			return start // no body: a declaration
		}
	}
	return last
}

// charLiteralEnd is the index of the quote that closes a character
// literal opened at line[i], or -1 when none does.
func charLiteralEnd(line string, i int) int {
	switch {
	case i+2 < len(line) && line[i+1] != '\\' && line[i+2] == '\'':
		return i + 2
	case i+1 < len(line) && line[i+1] == '\\':
		if j := strings.IndexByte(line[i+2:min(len(line), i+14)], '\''); j >= 0 {
			return i + 2 + j
		}
	}
	return -1
}

// findings turns ranked candidates into findings: at most
// maxFindingsFile a file and maxFindings in all, relevance in [0, 1].
func (r *ranker) findings(cs []*cand) []scored {
	var all []scored
	perFile := make(map[string]int)
	for _, c := range cs {
		if len(all) == maxFindings {
			break
		}
		if c.score <= 0 || perFile[c.path] == maxFindingsFile {
			continue
		}
		perFile[c.path]++
		f := Finding{Path: c.path, Line: c.line, EndLine: max(c.end, c.line)}
		if c.name != "" {
			f.Symbol = snippet(c.signature)
			f.Snippet = snippet(c.snippet)
			if f.Snippet == "" {
				f.Snippet = f.Symbol
			}
		} else if len(c.body) > 0 {
			best := c.body[0]
			for _, h := range c.body {
				if s, _ := r.fieldScore(r.wordsOf(h.text), 1, 0.5); s > 0 {
					if b, _ := r.fieldScore(r.wordsOf(best.text), 1, 0.5); s > b {
						best = h
					}
				}
			}
			f.Line, f.EndLine, f.Snippet = best.line, best.line, snippet(best.text)
		}
		all = append(all, scored{Finding: f, score: c.score})
	}
	if len(all) > 0 && all[0].score > 0 {
		top := all[0].score
		for i := range all {
			all[i].Relevance = math.Max(0.01, math.Round(all[i].score/top*100)/100)
		}
	}
	return all
}
