package offline

import (
	"cmp"
	"context"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/troupe-dev/troupe/builtin/tools"
)

// Tunables of the ranking. They are constants so that the policy is the
// same on every run.
const (
	maxGrepTerms    = 4   // grep calls in the search turn
	maxGlobTerms    = 4   // terms in the glob pattern
	maxGlobVariants = 8   // alternatives in the glob pattern
	grepMaxResults  = 200 // max_results of each grep
	maxReadFiles    = 6   // read calls in the read turn
	readBefore      = 5   // lines read above the best line
	readLimit       = 20  // lines read per file
	maxFindings     = 10  // findings in the answer
	maxPerFile      = 3   // findings from one file
	maxSnippet      = 160 // runes of a snippet
	lineDecay       = 0.5 // weight of each further line of a file
	maxLinesPerFile = 10  // lines that count towards a file's score
)

var (
	readLineRe = lazyRE(`^\s*(\d+)(?:\t|: |\| |→)(.*)$`)

	// defRes find the name a line defines.
	defRes = []*lazyRegexp{
		lazyRE(`^\s*(?:(?:export|default|pub(?:\([^)]*\))?|public|private|protected|internal|static|final|abstract|async|sealed|open|data|override|inline|unsafe|extern)\s+)*` +
			`(?:func|type|class|def|const|var|let|interface|struct|enum|trait|fn|function|module|impl|record|object|macro|namespace|typedef|union|val)\s+` +
			`(?:\([^)]*\)\s*)?\*?([\p{L}_$][\p{L}\p{N}_$]*)`),
		lazyRE(`^\s*([\p{L}_][\p{L}\p{N}_]*)(?:\s*,\s*[\p{L}_][\p{L}\p{N}_]*)*\s*:=`),
		lazyRE(`^\s*([\p{L}_][\p{L}\p{N}_]*)\s+(?:struct|interface)\s*\{`),
		lazyRE(`^\s*#\s*define\s+([\p{L}_][\p{L}\p{N}_]*)`),
	}
	commentRe = lazyRE(`^\s*(?://|#|/\*|\*|--|;;|<!--)`)
)

// hit is one line of evidence: from grep, or from a read window.
type hit struct {
	path  string
	line  int
	text  string
	score float64 // the line's own score, before the file's multiplier
}

// evidence is what the tools returned so far in this conversation.
type evidence struct {
	grep  []hit
	glob  []string
	reads map[string][]hit // path → numbered lines read
}

// fileRank is the aggregated score of one file.
type fileRank struct {
	path  string
	hits  []hit // scored lines, best first
	score float64
	mult  float64
}

// best is the line to read around: the best hit, or line 1.
func (f *fileRank) best() int {
	if len(f.hits) == 0 {
		return 1
	}
	return f.hits[0].line
}

// scored is a finding before rendering.
type scored struct {
	Finding
	score float64
}

// parseGrep reads grep's `path:line:text` lines with the tools package's
// own decoder, so that a quoted path (one holding ':', a newline or bytes
// that are not UTF-8) comes back exactly; anything else is skipped.
func parseGrep(out string) []hit {
	var hits []hit
	for _, m := range tools.ParseGrep(out) {
		p := m.Path
		for strings.HasPrefix(p, "./") {
			p = p[2:]
		}
		if p == "" {
			continue
		}
		hits = append(hits, hit{path: p, line: m.Line, text: strings.TrimSuffix(m.Text, "\r")})
	}
	return hits
}

// parseGlob reads one path a line, skipping notes such as "no matches" or
// "... 3 more not shown".
func parseGlob(out string) []string {
	var paths []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, `"`) { // a quoted path: exact
			paths = append(paths, tools.ParseGlob(l)...)
			continue
		}
		l = strings.TrimSpace(l)
		lower := strings.ToLower(l)
		switch {
		case l == "", strings.HasPrefix(l, "..."), strings.HasPrefix(l, "…"),
			strings.HasPrefix(l, "("), strings.HasPrefix(l, "["),
			strings.HasPrefix(lower, "no "), strings.HasPrefix(lower, "error"),
			strings.HasPrefix(lower, "warning"), strings.Contains(l, ": "),
			strings.ContainsFunc(l, unicode.IsSpace) && !strings.Contains(l, "/"):
			continue
		}
		if p := cleanPath(l); p != "" && !strings.HasSuffix(p, "/") {
			paths = append(paths, p)
		}
	}
	return paths
}

// parseRead reads numbered lines (`%6d\t%s`).
func parseRead(p, out string) []hit {
	var hits []hit
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSuffix(l, "\r")
		m := readLineRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		n, err := strconv.Atoi(m[1])
		if err != nil || n < 1 {
			continue
		}
		hits = append(hits, hit{path: p, line: n, text: m[2]})
	}
	return hits
}

func cleanPath(p string) string {
	p = strings.TrimSpace(p)
	for strings.HasPrefix(p, "./") {
		p = p[2:]
	}
	return p
}

// scorer scores lines and files against a task's terms.
type scorer struct {
	terms []term
}

// lineScore weighs the distinct terms on a line; a line that defines a
// term weighs much more.
func (s scorer) lineScore(text string) float64 {
	lt := strings.ToLower(text)
	var score float64
	var matched []term
	for _, t := range s.terms {
		if strings.Contains(lt, t.lower) {
			score += t.weight
			matched = append(matched, t)
		}
	}
	if len(matched) == 0 {
		return 0
	}
	if name := defName(text); name != "" {
		ln := strings.ToLower(name)
		for _, t := range matched {
			switch {
			case ln == t.lower || ln == strings.ReplaceAll(t.lower, "_", ""):
				score += 2 * t.weight
			case strings.Contains(ln, t.lower):
				score += 0.5 * t.weight
			}
		}
	} else if commentRe.MatchString(text) {
		score *= 0.85
	}
	return score
}

// defName returns the name a line defines, or "".
func defName(text string) string {
	for _, re := range defRes {
		if m := re.FindStringSubmatch(text); m != nil {
			return m[1]
		}
	}
	return ""
}

// nameScore weighs the terms found in a file's name and directories.
func (s scorer) nameScore(p string) float64 {
	lp := strings.ToLower(p)
	base := path.Base(lp)
	stem := strings.TrimSuffix(base, path.Ext(base))
	dir := path.Dir(lp)
	flat := strings.NewReplacer("_", "", "-", "", ".", "").Replace(stem)
	var score float64
	for _, t := range s.terms {
		squashed := strings.NewReplacer("_", "", "-", "", ".", "", " ", "").Replace(t.lower)
		switch {
		case stem == t.lower || flat == squashed:
			score += 2 * t.weight
		case strings.Contains(base, t.lower) || squashed != "" && strings.Contains(flat, squashed):
			score += 1.5 * t.weight
		case strings.Contains(dir, t.lower):
			score += 0.5 * t.weight
		}
	}
	return score
}

// pathMult slightly lowers tests, vendored code, docs and test data.
func pathMult(p string) float64 {
	lp := "/" + strings.ToLower(p)
	base := path.Base(lp)
	mult := 1.0
	switch {
	case strings.Contains(lp, "/vendor/"), strings.Contains(lp, "/node_modules/"),
		strings.Contains(lp, "/third_party/"):
		mult *= 0.6
	case strings.Contains(lp, "/testdata/"), strings.Contains(lp, "/fixtures/"):
		mult *= 0.7
	}
	switch {
	case strings.HasSuffix(base, "_test.go"), strings.HasPrefix(base, "test_"),
		strings.Contains(base, ".test."), strings.Contains(base, ".spec."),
		strings.HasSuffix(strings.TrimSuffix(base, path.Ext(base)), "_test"),
		strings.Contains(lp, "/test/"), strings.Contains(lp, "/tests/"),
		strings.Contains(lp, "/__tests__/"):
		mult *= 0.8
	}
	switch path.Ext(base) {
	case ".md", ".markdown", ".rst", ".txt", ".adoc":
		mult *= 0.8
	default:
		if strings.Contains(lp, "/docs/") || strings.Contains(lp, "/doc/") {
			mult *= 0.8
		}
	}
	return mult
}

// rankFiles aggregates the evidence per file, best first.
func (s scorer) rankFiles(ctx context.Context, ev evidence) ([]*fileRank, error) {
	files, err := s.fileHits(ctx, ev)
	if err != nil {
		return nil, err
	}
	out := make([]*fileRank, 0, len(files))
	for _, f := range files {
		s.scoreFile(f)
		if f.score > 0 {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b *fileRank) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return strings.Compare(a.path, b.path)
	})
	return out, nil
}

// fileHits are the files the search found, by path, each with the lines
// of the evidence that score: grep's, and what was read of it. A line
// found twice counts once.
func (s scorer) fileHits(ctx context.Context, ev evidence) (map[string]*fileRank, error) {
	files := make(map[string]*fileRank)
	seen := make(map[string]map[int]bool)
	get := func(p string) *fileRank {
		f := files[p]
		if f == nil {
			f = &fileRank{path: p}
			files[p] = f
			seen[p] = make(map[int]bool)
		}
		return f
	}
	addHit := func(h hit) {
		f := get(h.path)
		if seen[h.path][h.line] {
			return
		}
		seen[h.path][h.line] = true
		h.score = s.lineScore(h.text)
		if h.score > 0 {
			f.hits = append(f.hits, h)
		}
	}
	for i, h := range ev.grep {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		addHit(h)
	}
	for _, p := range ev.glob {
		get(p)
	}
	for _, p := range sortedKeys(ev.reads) {
		if _, ok := files[p]; !ok {
			continue // read but never found by search: not evidence
		}
		for _, h := range ev.reads[p] {
			addHit(h)
		}
	}
	return files, nil
}

// scoreFile sorts f's lines best first and scores f: its best lines,
// each counting less than the one before, the weight of the terms its
// lines mention, and its name, all times the weight of its path.
func (s scorer) scoreFile(f *fileRank) {
	slices.SortFunc(f.hits, func(a, b hit) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return a.line - b.line
	})
	var agg float64
	covered := make(map[string]bool)
	for i, h := range f.hits {
		if i < maxLinesPerFile {
			agg += h.score * math.Pow(lineDecay, float64(i))
		}
		lt := strings.ToLower(h.text)
		for _, t := range s.terms {
			if strings.Contains(lt, t.lower) {
				covered[t.lower] = true
			}
		}
	}
	var coverage float64
	for _, t := range s.terms {
		if covered[t.lower] {
			coverage += t.weight
		}
	}
	f.mult = pathMult(f.path)
	f.score = (agg + 0.5*coverage + s.nameScore(f.path)) * f.mult
}

// findings turns ranked files into ranked findings with relevance in
// [0, 1], best first.
func (s scorer) findings(files []*fileRank, reads map[string][]hit) []scored {
	var all []scored
	for _, f := range files {
		bonus := 0.25 * f.score
		if len(f.hits) == 0 {
			// Found by name only: point at the first line read, if any.
			line, text := 1, ""
			for _, h := range reads[f.path] {
				if strings.TrimSpace(h.text) != "" {
					line, text = h.line, h.text
					break
				}
			}
			all = append(all, scored{Finding: Finding{Path: f.path, Line: line, Snippet: snippet(text)}, score: bonus})
			continue
		}
		for i, h := range f.hits {
			if i == maxPerFile {
				break
			}
			all = append(all, scored{
				Finding: Finding{Path: f.path, Line: h.line, Snippet: snippet(h.text)},
				score:   h.score*f.mult + bonus,
			})
		}
	}
	slices.SortStableFunc(all, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return a.Line - b.Line
	})
	if len(all) > maxFindings {
		all = all[:maxFindings]
	}
	if len(all) > 0 && all[0].score > 0 {
		top := all[0].score
		for i := range all {
			all[i].Relevance = math.Max(0.01, math.Round(all[i].score/top*100)/100)
		}
	}
	return all
}

// snippet trims a source line for display: no control characters, tabs
// as spaces, at most maxSnippet runes.
func snippet(text string) string {
	text = strings.Map(func(r rune) rune {
		switch {
		case r == '\t':
			return ' '
		case unicode.IsControl(r), r == utf8.RuneError:
			return -1
		}
		return r
	}, text)
	text = strings.TrimSpace(text)
	if utf8.RuneCountInString(text) > maxSnippet {
		rs := []rune(text)
		text = strings.TrimSpace(string(rs[:maxSnippet-1])) + "…"
	}
	return text
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
