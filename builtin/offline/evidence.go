package offline

import (
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/troupe-dev/troupe/builtin/tools"
)

// Tunables of the search and the answer. They are constants so that the
// policy is the same on every run.
const (
	maxGrepTerms    = 4   // terms searched as written (grepTerms)
	maxGlobTerms    = 4   // terms in the glob pattern
	maxGlobVariants = 8   // alternatives in the glob pattern
	grepMaxResults  = 200 // max_results of the grep of a term as written
	maxReadFiles    = 6   // read calls in the read turn
	maxFindings     = 10  // findings in the answer
	maxSnippet      = 160 // runes of a snippet
)

var readLineRe = lazyRE(`^\s*(\d+)(?:\t|: |\| |→)(.*)$`)

// hit is one line of evidence: from grep, or from a read window.
type hit struct {
	path string
	line int
	text string
}

// evidence is what the tools returned so far in this conversation.
type evidence struct {
	grep  []hit
	glob  []string
	reads map[string][]hit // path → numbered lines read
	// syms are the declarations the symbols tool listed, and symCounts
	// the counts of its first line.
	syms      []tools.Symbol
	symCounts tools.SymbolCounts
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
