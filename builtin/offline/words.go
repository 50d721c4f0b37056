package offline

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The scanners here find what the patterns in their comments match,
// exactly (a test holds each against its pattern): words are what the
// model reads most, in every line of every file it ranks, and a pattern
// with Unicode classes took about 0.3–0.5 ms to compile, at every command
// that searched, and matched several times slower.

// isWordRune reports whether r is a letter, a number or '_'
// ([\p{L}\p{N}_]).
func isWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r)
}

// wordEnd returns where the run of word runes that starts at i ends: i
// when s[i:] starts with none.
func wordEnd(s string, i int) int {
	for i < len(s) {
		if c := s[i]; c < utf8.RuneSelf {
			if c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
				i++
				continue
			}
			return i
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if !isWordRune(r) { // an invalid byte reads as U+FFFD, which is neither
			return i
		}
		i += n
	}
	return i
}

// nextRune is where the rune at i ends.
func nextRune(s string, i int) int {
	if s[i] < utf8.RuneSelf {
		return i + 1
	}
	_, n := utf8.DecodeRuneInString(s[i:])
	return i + n
}

// wordsIn returns the words of s, as `[\p{L}\p{N}_]+` finds them.
func wordsIn(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		if e := wordEnd(s, i); e > i {
			out = append(out, s[i:e])
			i = e
			continue
		}
		i = nextRune(s, i)
	}
	return out
}

// tokenSpans returns where the tokens of s start and end: words joined
// by single dots, hyphens or slashes, as
// `[\p{L}\p{N}_]+(?:[.\-/][\p{L}\p{N}_]+)*` finds them.
func tokenSpans(s string) [][2]int {
	var out [][2]int
	for i := 0; i < len(s); {
		e := wordEnd(s, i)
		if e == i {
			i = nextRune(s, i)
			continue
		}
		for e < len(s) && (s[e] == '.' || s[e] == '-' || s[e] == '/') {
			next := wordEnd(s, e+1)
			if next == e+1 {
				break
			}
			e = next
		}
		out = append(out, [2]int{i, e})
		i = e
	}
	return out
}

// isCompoundSep reports whether c joins the parts of a compound name
// ([.\-/:]).
func isCompoundSep(c byte) bool { return c == '.' || c == '-' || c == '/' || c == ':' }

// isSingleIdent reports whether s is one name, whose parts may be joined
// by dots, hyphens, slashes or colons, as
// `^[\p{L}\p{N}_]+(?:[.\-/:]+[\p{L}\p{N}_]+)*$` matches it.
func isSingleIdent(s string) bool {
	i := wordEnd(s, 0)
	if i == 0 {
		return false
	}
	for i < len(s) {
		j := i
		for j < len(s) && isCompoundSep(s[j]) {
			j++
		}
		if j == i {
			return false
		}
		k := wordEnd(s, j)
		if k == j {
			return false
		}
		i = k
	}
	return true
}

// isSpace reports whether c is a space as patterns read `\s`
// ([\t\n\f\r ]).
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }

// spaceEnd returns where the run of spaces that starts at i ends.
func spaceEnd(s string, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

// identEnd returns where the name that starts at i ends, a letter or '_'
// then word runes, or with dollar also '$' anywhere in it
// (`[\p{L}_][\p{L}\p{N}_]*`, `[\p{L}_$][\p{L}\p{N}_$]*`): i when s[i:]
// starts with none.
func identEnd(s string, i int, dollar bool) int {
	start := i
	for i < len(s) {
		c := s[i]
		if dollar && c == '$' {
			i++
			continue
		}
		var r rune
		n := 1
		if c < utf8.RuneSelf {
			r = rune(c)
		} else {
			r, n = utf8.DecodeRuneInString(s[i:])
		}
		if i == start {
			if r != '_' && !unicode.IsLetter(r) {
				return i
			}
			i += n
			continue
		}
		if !isWordRune(r) {
			return i
		}
		i += n
	}
	return i
}

// afterReceiver returns where what follows a Go receiver or a parameter
// list at i begins (`(?:\([^)]*\)\s*)?`): past the parenthesis and the
// spaces after it when s[i:] starts with one that closes, else i. The
// patterns fall back to no parenthesis when what follows fails, which
// cannot then match at a '(' either way.
func afterReceiver(s string, i int) int {
	if i >= len(s) || s[i] != '(' {
		return i
	}
	j := strings.IndexByte(s[i+1:], ')')
	if j < 0 {
		return i
	}
	return spaceEnd(s, i+1+j+1)
}

// goFuncName returns the name a Go func line defines, as
// `^func\s+(?:\([^)]*\)\s*)?([\p{L}_][\p{L}\p{N}_]*)` finds it, or "".
func goFuncName(s string) string {
	if !strings.HasPrefix(s, "func") {
		return ""
	}
	i := spaceEnd(s, len("func"))
	if i == len("func") {
		return ""
	}
	i = afterReceiver(s, i)
	return s[i:identEnd(s, i, false)]
}

// declModifiers and declKeywords are the words of declaredName's
// pattern; none is in both.
var (
	declModifiers = []string{"export", "default", "pub", "public", "private", "protected", "internal", "static", "final",
		"abstract", "async", "sealed", "open", "data", "override", "inline", "unsafe", "extern"}
	declKeywords = []string{"func", "type", "class", "def", "const", "var", "let", "interface", "struct", "enum", "trait",
		"fn", "function", "module", "record", "object", "macro", "namespace", "typedef", "union", "val"}
)

// wordThenSpace returns where the spaces after the first of words that
// s[i:] starts with, followed by at least one space, end; i when none
// is. (At most one can be: no word of either list is another followed
// by a space.)
func wordThenSpace(s string, i int, words []string) int {
	for _, w := range words {
		if strings.HasPrefix(s[i:], w) {
			if e := spaceEnd(s, i+len(w)); e > i+len(w) {
				return e
			}
		}
	}
	return i
}

// declaredName returns the name a declaration line defines, as this
// pattern finds it, or "":
//
//	^\s*(?:(?:export|default|pub(?:\([^)]*\))?|public|private|protected|internal|static|final|abstract|async|sealed|open|data|override|inline|unsafe|extern)\s+)*
//	(?:func|type|class|def|const|var|let|interface|struct|enum|trait|fn|function|module|record|object|macro|namespace|typedef|union|val)\s+
//	(?:\([^)]*\)\s*)?\*?([\p{L}_$][\p{L}\p{N}_$]*)
//
// (one pattern, in three lines). No modifier is a keyword, so taking
// every modifier there is never passes over a keyword the pattern would
// have found with fewer.
func declaredName(s string) string {
	i := spaceEnd(s, 0)
	for {
		if strings.HasPrefix(s[i:], "pub(") {
			if j := strings.IndexByte(s[i+len("pub("):], ')'); j >= 0 {
				if e := i + len("pub(") + j + 1; spaceEnd(s, e) > e {
					i = spaceEnd(s, e)
					continue
				}
			}
		}
		e := wordThenSpace(s, i, declModifiers)
		if e == i {
			break
		}
		i = e
	}
	e := wordThenSpace(s, i, declKeywords)
	if e == i {
		return ""
	}
	i = afterReceiver(s, e)
	if i < len(s) && s[i] == '*' {
		if end := identEnd(s, i+1, true); end > i+1 {
			return s[i+1 : end]
		}
	}
	return s[i:identEnd(s, i, true)]
}

// assignedName returns the first name a short variable declaration
// assigns, as `^\s*([\p{L}_][\p{L}\p{N}_]*)(?:\s*,\s*[\p{L}_][\p{L}\p{N}_]*)*\s*:=`
// finds it, or "".
func assignedName(s string) string {
	i := spaceEnd(s, 0)
	e := identEnd(s, i, false)
	if e == i {
		return ""
	}
	for j := e; ; {
		j = spaceEnd(s, j)
		switch {
		case strings.HasPrefix(s[j:], ":="):
			return s[i:e]
		case j < len(s) && s[j] == ',':
			k := spaceEnd(s, j+1)
			if j = identEnd(s, k, false); j == k {
				return ""
			}
		default:
			return ""
		}
	}
}

// structName returns the name of a struct or interface a line begins,
// as `^\s*([\p{L}_][\p{L}\p{N}_]*)\s+(?:struct|interface)\s*\{` finds
// it, or "".
func structName(s string) string {
	i := spaceEnd(s, 0)
	e := identEnd(s, i, false)
	j := spaceEnd(s, e)
	if e == i || j == e {
		return ""
	}
	rest, ok := strings.CutPrefix(s[j:], "struct")
	if !ok {
		if rest, ok = strings.CutPrefix(s[j:], "interface"); !ok {
			return ""
		}
	}
	if !strings.HasPrefix(rest[spaceEnd(rest, 0):], "{") {
		return ""
	}
	return s[i:e]
}

// macroName returns the name a #define line defines, as
// `^\s*#\s*define\s+([\p{L}_][\p{L}\p{N}_]*)` finds it, or "".
func macroName(s string) string {
	i := spaceEnd(s, 0)
	if i >= len(s) || s[i] != '#' {
		return ""
	}
	i = spaceEnd(s, i+1)
	if !strings.HasPrefix(s[i:], "define") {
		return ""
	}
	j := spaceEnd(s, i+len("define"))
	if j == i+len("define") {
		return ""
	}
	return s[j:identEnd(s, j, false)]
}

// isPathRune reports whether r may be in a reference's path
// ([\p{L}\p{N}_.\-+@~/\\]).
func isPathRune(r rune) bool {
	switch r {
	case '.', '-', '+', '@', '~', '/', '\\':
		return true
	}
	return isWordRune(r)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// digitsEnd returns where the run of ASCII digits (`\d`) at i ends.
func digitsEnd(s string, i int) int {
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

// digitsAt reports whether s[i:] starts with a digit.
func digitsAt(s string, i int) bool { return i < len(s) && isDigit(s[i]) }

// refSpans returns the references to a line of a file in s, as
// FindAllStringSubmatchIndex returns this pattern's matches:
//
//	([\p{L}\p{N}_.\-+@~/\\]*[\p{L}\p{N}_])(?::(\d+)(?:[\-–](\d+)|:\d+)?|#L(\d+)(?:-L?(\d+))?)
//
// A path is followed by ':' or '#', which are no path runes: so a
// reference's path is a whole run of path runes (from where the search
// resumed, after the last reference), which ends in a word rune.
func refSpans(s string) [][]int {
	var out [][]int
	for i := 0; i < len(s); {
		end, word := i, false
		for end < len(s) {
			r, n := rune(s[end]), 1
			if r >= utf8.RuneSelf {
				r, n = utf8.DecodeRuneInString(s[end:])
			}
			if !isPathRune(r) {
				break
			}
			word = isWordRune(r)
			end += n
		}
		if end == i {
			i = nextRune(s, i)
			continue
		}
		if word {
			if m := refAt(s, i, end); m != nil {
				out = append(out, m)
				i = m[1]
				continue
			}
		}
		i = end
	}
	return out
}

// refAt returns the reference whose path is s[start:end] as the
// pattern's submatch indexes, or nil when what follows the path makes
// none.
func refAt(s string, start, end int) []int {
	m := []int{start, -1, start, end, -1, -1, -1, -1, -1, -1, -1, -1}
	switch {
	case end < len(s) && s[end] == ':' && digitsAt(s, end+1):
		d := digitsEnd(s, end+1)
		m[4], m[5], m[1] = end+1, d, d
		switch rest := s[d:]; {
		case strings.HasPrefix(rest, "-") && digitsAt(s, d+1):
			m[6], m[7] = d+1, digitsEnd(s, d+1)
			m[1] = m[7]
		case strings.HasPrefix(rest, "–") && digitsAt(s, d+len("–")):
			m[6], m[7] = d+len("–"), digitsEnd(s, d+len("–"))
			m[1] = m[7]
		case strings.HasPrefix(rest, ":") && digitsAt(s, d+1):
			m[1] = digitsEnd(s, d+1)
		}
	case strings.HasPrefix(s[end:], "#L") && digitsAt(s, end+2):
		d := digitsEnd(s, end+2)
		m[8], m[9], m[1] = end+2, d, d
		if strings.HasPrefix(s[d:], "-") {
			k := d + 1
			if strings.HasPrefix(s[k:], "L") {
				k++
			}
			if digitsAt(s, k) {
				m[10], m[11] = k, digitsEnd(s, k)
				m[1] = m[11]
			}
		}
	default:
		return nil
	}
	return m
}
