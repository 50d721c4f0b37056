package suggest

import (
	"fmt"
	"slices"
	"strings"
)

// Nearest returns the candidate closest to word by edit distance, ignoring
// case, '_' and '-', or "" when none is close enough to be a likely typo.
// Error messages use it to say what to write instead.
func Nearest(word string, candidates []string) string {
	w := cut(foldName(word))
	if w == "" {
		return ""
	}
	best, bestDist := "", -1
	for _, c := range candidates {
		d := editDistance(w, foldName(c))
		if bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	// A word must keep at least one of its letters to be a typo: "rm" is
	// not a misspelt "ls". The limit is judged on the letters compared.
	limit := min(max(2, len(w)/3), len(w)-1)
	if bestDist < 0 || bestDist > limit {
		return ""
	}
	return best
}

// maxListed is how many names an error spells out; past that, a list is
// longer than it is useful.
const maxListed = 12

// Hint says, after "unknown NOUN NAME", what name could have been meant:
// `; did you mean "explore"?` when a known name is close, else the known
// names when they are few. plural names them ("types", "tools").
func Hint(name string, known []string, plural string) string {
	known = slices.Compact(slices.Sorted(slices.Values(known)))
	switch near := Nearest(name, known); {
	case near != "":
		return fmt.Sprintf("; did you mean %q?", near)
	case len(known) == 0:
		return fmt.Sprintf("; no %s are registered", plural)
	case len(known) <= maxListed:
		return fmt.Sprintf("; the %s are %s", plural, strings.Join(known, ", "))
	default:
		return fmt.Sprintf("; none of the %d %s has a name close to it", len(known), plural)
	}
}

// SameName reports whether a and b are one name written two ways: they
// differ only in case, '_', '-' and spaces (maxTokens, max-tokens and
// max_tokens are one name).
func SameName(a, b string) bool { return foldName(a) == foldName(b) }

func foldName(s string) string {
	s = strings.ToLower(s)
	return strings.NewReplacer("_", "", "-", "", " ", "").Replace(s)
}

// maxCompared is how many bytes of a name are compared. Names are short
// field and tool names; long ones are cut so that a hostile file cannot
// make editDistance quadratic in its size.
const maxCompared = 64

func cut(s string) string {
	if len(s) > maxCompared {
		return s[:maxCompared]
	}
	return s
}

// editDistance is the Levenshtein distance between the first maxCompared
// bytes of a and of b, counted in bytes.
func editDistance(a, b string) int {
	a, b = cut(a), cut(b)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
