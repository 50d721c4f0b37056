package offline

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The scanners of words.go find exactly what the patterns they replace
// found, on strings made of what those patterns tell apart: ASCII and
// other letters and numbers, '_', the separators, spaces, punctuation,
// invalid UTF-8 and U+FFFD itself.
func TestScannersMatchTheirPatterns(t *testing.T) {
	var (
		wordRe        = regexp.MustCompile(`[\p{L}\p{N}_]+`)
		tokenRe       = regexp.MustCompile(`[\p{L}\p{N}_]+(?:[.\-/][\p{L}\p{N}_]+)*`)
		singleIdentRe = regexp.MustCompile(`^[\p{L}\p{N}_]+(?:[.\-/:]+[\p{L}\p{N}_]+)*$`)
	)
	pieces := []string{"a", "Z", "q", "7", "_", ".", "-", "/", ":", " ", "\t", "(", "'", "é", "日", "ª", "²", "٣", "Ⅻ",
		"\u0301", "\xff", "\xc3", "\uFFFD", "🎉", "..", "a.b", "x-1", "ab/cd", "::"}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 50_000 {
		var b strings.Builder
		for range rng.IntN(9) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		s := b.String()
		if got, want := wordsIn(s), wordRe.FindAllString(s, -1); !slices.Equal(got, want) {
			t.Fatalf("case %d: wordsIn(%q) = %q, the pattern finds %q", i, s, got, want)
		}
		var spans [][]int
		for _, sp := range tokenSpans(s) {
			spans = append(spans, []int{sp[0], sp[1]})
		}
		if want := tokenRe.FindAllStringIndex(s, -1); !slices.EqualFunc(spans, want, slices.Equal) {
			t.Fatalf("case %d: tokenSpans(%q) = %v, the pattern finds %v", i, s, spans, want)
		}
		if got, want := isSingleIdent(s), singleIdentRe.MatchString(s); got != want {
			t.Fatalf("case %d: isSingleIdent(%q) = %v, the pattern says %v", i, s, got, want)
		}
	}
}

// The scanners of definitions and references, each held to the pattern
// it replaced, on random strings made of what those patterns look for,
// and on every line of the project's Go code and test data.
func TestDefinitionAndReferenceScannersMatchTheirPatterns(t *testing.T) {
	submatch := func(re *regexp.Regexp) func(string) string {
		return func(s string) string {
			if m := re.FindStringSubmatch(s); m != nil {
				return m[1]
			}
			return ""
		}
	}
	names := []struct {
		name    string
		scanner func(string) string
		pattern func(string) string
	}{
		{"goFuncName", goFuncName, submatch(regexp.MustCompile(`^func\s+(?:\([^)]*\)\s*)?([\p{L}_][\p{L}\p{N}_]*)`))},
		{"declaredName", declaredName, submatch(regexp.MustCompile(
			`^\s*(?:(?:export|default|pub(?:\([^)]*\))?|public|private|protected|internal|static|final|abstract|async|sealed|open|data|override|inline|unsafe|extern)\s+)*` +
				`(?:func|type|class|def|const|var|let|interface|struct|enum|trait|fn|function|module|record|object|macro|namespace|typedef|union|val)\s+` +
				`(?:\([^)]*\)\s*)?\*?([\p{L}_$][\p{L}\p{N}_$]*)`))},
		{"assignedName", assignedName, submatch(regexp.MustCompile(`^\s*([\p{L}_][\p{L}\p{N}_]*)(?:\s*,\s*[\p{L}_][\p{L}\p{N}_]*)*\s*:=`))},
		{"structName", structName, submatch(regexp.MustCompile(`^\s*([\p{L}_][\p{L}\p{N}_]*)\s+(?:struct|interface)\s*\{`))},
		{"macroName", macroName, submatch(regexp.MustCompile(`^\s*#\s*define\s+([\p{L}_][\p{L}\p{N}_]*)`))},
	}
	refRe := regexp.MustCompile(`([\p{L}\p{N}_.\-+@~/\\]*[\p{L}\p{N}_])(?::(\d+)(?:[\-–](\d+)|:\d+)?|#L(\d+)(?:-L?(\d+))?)`)
	check := func(what string, s string) {
		t.Helper()
		for _, n := range names {
			if got, want := n.scanner(s), n.pattern(s); got != want {
				t.Fatalf("%s: %s(%q) = %q, the pattern finds %q", what, n.name, s, got, want)
			}
		}
		if got, want := refSpans(s), refRe.FindAllStringSubmatchIndex(s, -1); !slices.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("%s: refSpans(%q) = %v, the pattern finds %v", what, s, got, want)
		}
	}
	pieces := []string{"func", "func ", "type", "typedef", "function", "fn", "val", "pub", "pub(", "pub(crate)", "public",
		"export", "default", "static", "data", "struct", "interface", "define", "#", "{", "(", ")", "*", "$", ":=", ":", ",",
		" ", "  ", "\t", "\n", "\r", "\f", "\v", "a", "Z", "_", "7", "x1", "é", "日", "²", "\u0301", "\xff", "\uFFFD",
		"-", "–", "#L", "L", ".", "/", "\\", "@", "~", "+", "12", "3", "foo.go", "a/b.py", "٣", "３", "\u00a0", "\u0085"}
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 100_000 {
		var b strings.Builder
		for range rng.IntN(10) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		check(fmt.Sprintf("case %d", i), b.String())
	}
	lines := 0
	forEachProjectLine(t, func(p, line string) {
		lines++
		check(p, strings.TrimSuffix(line, "\n"))
	})
	require.Greater(t, lines, 10_000, "too few lines read to test anything")
}
