package offline

import (
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
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

// A definition pattern's needs only skip lines it cannot match: over
// every line of the project's test data and of two of its packages,
// defName says what the patterns alone say.
func TestDefinitionNeedsSkipOnlyLinesThatCannotMatch(t *testing.T) {
	patternsAlone := func(text string) string {
		for _, d := range defRes {
			if m := d.re.FindStringSubmatch(text); m != nil {
				return m[1]
			}
		}
		return ""
	}
	lines, found := 0, 0
	read := func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for line := range strings.Lines(string(data)) {
			lines++
			want := patternsAlone(line)
			if want != "" {
				found++
			}
			if got := defName(line); got != want {
				t.Fatalf("%s: defName(%q) = %q, the patterns alone say %q", p, line, got, want)
			}
		}
		return nil
	}
	for _, root := range []string{"../../testdata", ".", "../../manager"} {
		if err := filepath.WalkDir(root, read); err != nil {
			t.Fatal(err)
		}
	}
	if lines < 1000 || found < 50 {
		t.Fatalf("read %d lines, %d definitions: too few to test anything", lines, found)
	}
}
