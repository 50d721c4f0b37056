package offline

import (
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
