package offline

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
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
