package tools

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Match is one matching line as grep reports it.
type Match struct {
	Path string // relative to the root, with '/'; any bytes a file name may hold
	Line int    // 1-based
	Text string // the line without its ending, cut as grep cuts it
}

// QuotePath returns p as grep and glob print it: as is, or, when p could
// be misread (it holds ':', a control character such as a newline, bytes
// that are not UTF-8, leading or trailing space, starts with '"' or
// "... ", or is a tool's no-result text), as a Go-quoted string ("we\nird.go", "a:b.go", "\xff.go"), as
// git quotes unusual names. A quoted path starts with '"' and a plain
// one never does, so the two cannot be confused.
func QuotePath(p string) string {
	if needsQuote(p) {
		return strconv.Quote(p)
	}
	return p
}

func needsQuote(p string) bool {
	if p == "" {
		return false
	}
	if !utf8.ValidString(p) || strings.HasPrefix(p, `"`) || strings.HasPrefix(p, "... ") ||
		p == globNoMatch || p == grepNoMatch ||
		strings.ContainsRune(p, ':') || strings.ContainsFunc(p, unicode.IsControl) {
		return true
	}
	first, _ := utf8.DecodeRuneInString(p)
	last, _ := utf8.DecodeLastRuneInString(p)
	return unicode.IsSpace(first) || unicode.IsSpace(last)
}

// unquotePath undoes QuotePath at the start of s: it returns the path and
// the rest of s after it.
func unquotePath(s string) (path, rest string, ok bool) {
	if !strings.HasPrefix(s, `"`) {
		return "", "", false
	}
	q, err := strconv.QuotedPrefix(s)
	if err != nil {
		return "", "", false
	}
	p, err := strconv.Unquote(q)
	if err != nil {
		return "", "", false
	}
	return p, s[len(q):], true
}

// ParseGrep reads grep's output back into matches: the exact paths,
// quoted or not, line numbers and texts. Notes ("... ") and "no matches"
// are skipped.
func ParseGrep(out string) []Match {
	var ms []Match
	for _, l := range strings.Split(out, "\n") {
		if m, ok := parseGrepLine(l); ok {
			ms = append(ms, m)
		}
	}
	return ms
}

func parseGrepLine(l string) (Match, bool) {
	p, rest, ok := unquotePath(l)
	if !ok {
		if strings.HasPrefix(l, `"`) {
			return Match{}, false // a plain path never starts with '"'
		}
		var found bool
		p, rest, found = strings.Cut(l, ":")
		if !found || p == "" {
			return Match{}, false
		}
		rest = ":" + rest
	}
	rest, ok = strings.CutPrefix(rest, ":")
	if !ok {
		return Match{}, false
	}
	num, text, ok := strings.Cut(rest, ":")
	if !ok {
		return Match{}, false
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 1 {
		return Match{}, false
	}
	return Match{Path: p, Line: n, Text: text}, true
}

// ParseGlob reads glob's output back into paths, quoted or not. Notes
// ("... ") and "no files match" are skipped.
func ParseGlob(out string) []string {
	var paths []string
	for _, l := range strings.Split(out, "\n") {
		if p, rest, ok := unquotePath(l); ok {
			if rest == "" {
				paths = append(paths, p)
			}
			continue
		}
		if l != "" && l != globNoMatch && !strings.HasPrefix(l, "... ") && !strings.HasPrefix(l, `"`) {
			paths = append(paths, l)
		}
	}
	return paths
}
