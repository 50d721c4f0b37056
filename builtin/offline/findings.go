package offline

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Finding is one place in the code that answers the task, as the explore
// type reports it in its structured output.
//
// Path holds the file name's exact bytes. JSON strings are Unicode, so a
// path that is not valid UTF-8 is encoded twice: "path" with each run of
// invalid bytes replaced by U+FFFD, for reading, and "path_bytes" with the exact
// bytes in base64, for opening the file. path_bytes is present only then,
// and decoding a Finding prefers it.
type Finding struct {
	Path string `json:"path"`
	// Line is the first line of the finding; EndLine its last (Line when
	// the finding is one line).
	Line    int `json:"line"`
	EndLine int `json:"end_line"`
	// Symbol is the definition the finding is, as its source writes it
	// ("func (c *Client) Kill()"), or "" for a finding outside one.
	Symbol    string  `json:"symbol"`
	Snippet   string  `json:"snippet"`
	Relevance float64 `json:"relevance"`
}

// findingJSON is Finding's JSON form.
type findingJSON struct {
	Path      string  `json:"path"`
	PathBytes []byte  `json:"path_bytes,omitempty"`
	Line      int     `json:"line"`
	EndLine   int     `json:"end_line"`
	Symbol    string  `json:"symbol"`
	Snippet   string  `json:"snippet"`
	Relevance float64 `json:"relevance"`
}

// MarshalJSON adds path_bytes when Path is not valid UTF-8.
func (f Finding) MarshalJSON() ([]byte, error) {
	j := findingJSON{Path: f.Path, Line: f.Line, EndLine: max(f.EndLine, f.Line), Symbol: f.Symbol, Snippet: f.Snippet, Relevance: f.Relevance}
	if !utf8.ValidString(f.Path) {
		j.Path = strings.ToValidUTF8(f.Path, "\uFFFD")
		j.PathBytes = []byte(f.Path)
	}
	return json.Marshal(j)
}

// UnmarshalJSON takes the exact path from path_bytes when present.
func (f *Finding) UnmarshalJSON(data []byte) error {
	var j findingJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*f = Finding{Path: j.Path, Line: j.Line, EndLine: max(j.EndLine, j.Line), Symbol: j.Symbol, Snippet: j.Snippet, Relevance: j.Relevance}
	if j.PathBytes != nil {
		f.Path = string(j.PathBytes)
	}
	return nil
}

var (
	// quotedRefRe finds "path":line and "path":line-end with a Go-quoted path.
	quotedRefRe = lazyRE(`("(?:[^"\\]|\\.)*"):(\d+)(?:-(\d+))?`)
	// relevanceRe finds "(relevance 0.87)", "(score: 0.5)", "(relevance 87%)".
	relevanceRe = lazyRE(`(?i)\(\s*(?:relevance|score|confidence)\s*[:=]?\s*([0-9]+(?:\.[0-9]+)?|\.[0-9]+)\s*(%)?\s*\)`)
	listMarkRe  = lazyRE(`^\s*(?:>\s*)*(?:[-*+•]|\d+[.)])\s+`)
	leadRe      = lazyRE("^(?:\\]\\([^)]*\\)|[`*_\\])]+)*")
	sepRe       = lazyRE(`^\s*(?:—|–|-{1,2}|:|\||=>|->|,|;)\s*`)
	fenceRe     = lazyRE("^\\s*(?:```|~~~)")
)

// ParseFindings extracts findings from an answer: the offline model's own
// Markdown, or what a language model wrote. Every line outside code fences
// that holds a `path:line` reference (with or without backticks, bold or a
// link) gives a finding; the text after the reference, past a dash or a
// colon, is the snippet, and "(relevance X)" its relevance. A finding
// without a relevance gets one from its position: 1, then decreasing. A
// path:line that appears twice is kept once.
func ParseFindings(markdown string) []Finding {
	var (
		out      []Finding
		explicit []bool
		seen     = make(map[string]bool)
		fenced   bool
	)
	for _, line := range strings.Split(markdown, "\n") {
		line = strings.TrimRight(line, "\r")
		if fenceRe.MatchString(line) {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		refs := lineRefs(line)
		if len(refs) == 0 {
			continue
		}
		segs := make([]string, len(refs))
		rels := make([]float64, len(refs))
		hasRel := make([]bool, len(refs))
		syms := make([]string, len(refs))
		for i, r := range refs {
			end := len(line)
			if i+1 < len(refs) {
				end = refs[i+1].start
			}
			var seg string
			syms[i], seg = cutSymbol(line[r.end:end])
			segs[i], rels[i], hasRel[i] = cleanSegment(seg)
		}
		// A reference followed only by punctuation ("`a.go:1`, `a.go:2` — x")
		// shares the line's last text; a line whose text comes first
		// ("The loop (`loop.go:5`)") uses that.
		fallback, fallbackRel, fallbackHas := segs[len(segs)-1], rels[len(refs)-1], hasRel[len(refs)-1]
		if fallback == "" {
			fallback = cleanBefore(line[:refs[0].start])
		}
		for i, r := range refs {
			key := r.path + ":" + strconv.Itoa(r.line)
			if seen[key] {
				continue
			}
			seen[key] = true
			snip, rel, has := segs[i], rels[i], hasRel[i]
			if snip == "" {
				snip = fallback
			}
			if !has {
				rel, has = fallbackRel, fallbackHas
			}
			sym := ""
			if i < len(syms) {
				sym = syms[i]
			}
			out = append(out, Finding{Path: r.path, Line: r.line, EndLine: r.last, Symbol: sym, Snippet: snip, Relevance: rel})
			explicit = append(explicit, has)
		}
	}
	n := len(out)
	for i := range out {
		if !explicit[i] {
			out[i].Relevance = math.Round((1-float64(i)/float64(n))*100) / 100
		}
	}
	return out
}

type ref struct {
	path       string
	line       int
	last       int // the range's last line: line unless path:line-last
	start, end int
}

// rangeEnd reads the end of a line range from line[i:j], or gives first
// when there is none or it is before first.
func rangeEnd(line string, i, j, first int) int {
	if i < 0 {
		return first
	}
	n, err := strconv.Atoi(line[i:j])
	if err != nil || n < first {
		return first
	}
	return n
}

// lineRefs finds the path:line references of one line: Go-quoted paths
// ("a:b.go":3), as the offline model writes names that are not plain,
// then plain ones outside them.
func lineRefs(line string) []ref {
	var refs []ref
	for _, m := range quotedRefRe.FindAllStringSubmatchIndex(line, -1) {
		p, err := strconv.Unquote(line[m[2]:m[3]])
		n, nerr := strconv.Atoi(line[m[4]:m[5]])
		if err != nil || nerr != nil || n < 1 || p == "" ||
			!looksLikePath(p, strings.HasSuffix(line[:m[0]], "`")) {
			continue // also "key":1 in JSON-like prose
		}
		refs = append(refs, ref{path: p, line: n, last: rangeEnd(line, m[6], m[7], n), start: m[0], end: m[1]})
	}
	quoted := len(refs)
	for _, m := range refSpans(line) { // path:line, path:line:col, path:line-end, path#Lline
		if slices.ContainsFunc(refs[:quoted], func(q ref) bool { return m[0] < q.end && q.start < m[1] }) {
			continue // inside a quoted reference
		}
		p := line[m[2]:m[3]]
		num, endAt := "", 6
		if m[4] >= 0 {
			num = line[m[4]:m[5]]
		} else {
			num, endAt = line[m[8]:m[9]], 10
		}
		n, err := strconv.Atoi(num)
		if err != nil || n < 1 {
			continue
		}
		if strings.HasPrefix(p, "//") {
			continue // a URL such as https://host:8080
		}
		for strings.HasPrefix(p, "./") {
			p = p[2:]
		}
		if !looksLikePath(p, strings.HasSuffix(line[:m[2]], "`")) {
			continue
		}
		refs = append(refs, ref{path: p, line: n, last: rangeEnd(line, m[endAt], m[endAt+1], n), start: m[0], end: m[1]})
	}
	slices.SortFunc(refs, func(a, b ref) int { return a.start - b.start })
	return refs
}

// looksLikePath accepts names with a directory or an extension, and any
// name in backticks ("`Makefile:12`"); it rejects "Step:1" and "10:30".
func looksLikePath(p string, backticked bool) bool {
	if p == "" || strings.IndexFunc(p, unicode.IsLetter) < 0 {
		return false
	}
	if strings.ContainsAny(p, "/\\") {
		return true
	}
	if i := strings.LastIndexByte(p, '.'); i > 0 && i < len(p)-1 {
		return true
	}
	return backticked
}

// symbolRe finds the symbol the offline model writes after a reference:
// " in `func (c *Client) Kill()`", then a dash or the end.
var symbolRe = lazyRE("^[`*_]*\\s+in\\s+(`+)\\s?(.+?)\\s?(`+)(?:\\s+—\\s+|\\s*$|\\s+\\()")

// cutSymbol takes " in `symbol`" from the start of the text after a
// reference, and returns the symbol and the rest.
func cutSymbol(seg string) (string, string) {
	m := symbolRe.FindStringSubmatchIndex(seg)
	if m == nil || seg[m[2]:m[3]] != seg[m[6]:m[7]] {
		return "", seg
	}
	rest := seg[m[7]:]
	return seg[m[4]:m[5]], rest
}

// cleanSegment turns the text after a reference into a snippet and a
// relevance.
func cleanSegment(s string) (string, float64, bool) {
	var rel float64
	var has bool
	// Only a segment with both parentheses can hold a relevance: most
	// hold none, and the pattern is not compiled for them.
	if strings.Contains(s, "(") && strings.Contains(s, ")") {
		if locs := relevanceRe.FindAllStringSubmatchIndex(s, -1); len(locs) > 0 {
			m := locs[len(locs)-1]
			if v, err := strconv.ParseFloat(s[m[2]:m[3]], 64); err == nil {
				if m[4] >= 0 || v > 1 {
					v /= 100
				}
				rel, has = math.Max(0, math.Min(1, v)), true
			}
			s = s[:m[0]] + s[m[1]:]
		}
	}
	s = leadRe.ReplaceAllString(s, "")
	s = sepRe.ReplaceAllString(s, "")
	s = strings.TrimSpace(s)
	s = strings.TrimRight(s, " \t|—–-:")
	s = strings.TrimSpace(s)
	s = unwrap(s)
	if strings.IndexFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) < 0 {
		s = ""
	}
	return s, rel, has
}

// cleanBefore turns the text before a reference into a snippet.
func cleanBefore(s string) string {
	s = listMarkRe.ReplaceAllString(s, "")
	s = strings.TrimSpace(s)
	s = strings.TrimRight(s, " \t`*_[(|—–-:")
	s = strings.TrimSpace(s)
	s = unwrap(s)
	if strings.IndexFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) < 0 {
		return ""
	}
	return s
}

// unwrap removes a code span or bold markers around the whole of s.
func unwrap(s string) string {
	if n := len(s) - len(strings.TrimLeft(s, "`")); n > 0 {
		// The span opened by n backticks closes at the next run of exactly
		// n backticks; it is the whole of s only if that run ends s.
		rest := s[n:]
		for i := 0; i < len(rest); {
			if rest[i] != '`' {
				i++
				continue
			}
			j := i
			for j < len(rest) && rest[j] == '`' {
				j++
			}
			if j-i == n {
				if j != len(rest) {
					return s
				}
				inner := rest[:i]
				if len(inner) >= 2 && inner[0] == ' ' && inner[len(inner)-1] == ' ' && strings.TrimSpace(inner) != "" {
					inner = inner[1 : len(inner)-1]
				}
				return inner
			}
			i = j
		}
		return s
	}
	for _, w := range []string{"**", "__"} {
		if len(s) > 2*len(w) && strings.HasPrefix(s, w) && strings.HasSuffix(s, w) {
			return strings.TrimSpace(s[len(w) : len(s)-len(w)])
		}
	}
	return s
}
