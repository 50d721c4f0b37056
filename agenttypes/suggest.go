package agenttypes

import "strings"

// Nearest returns the candidate closest to word by edit distance, ignoring
// case, '_' and '-', or "" when none is close enough to be a likely typo.
// Error messages use it to say what to write instead.
func Nearest(word string, candidates []string) string {
	w := foldName(word)
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
	limit := max(2, len(w)/3)
	if bestDist < 0 || bestDist > limit {
		return ""
	}
	return best
}

func foldName(s string) string {
	s = strings.ToLower(s)
	return strings.NewReplacer("_", "", "-", "", " ", "").Replace(s)
}

// editDistance is the Levenshtein distance between a and b, counted in
// bytes. Inputs are short field and tool names; long inputs are cut so that
// a hostile file cannot make this quadratic in its size.
func editDistance(a, b string) int {
	const maxLen = 64
	if len(a) > maxLen {
		a = a[:maxLen]
	}
	if len(b) > maxLen {
		b = b[:maxLen]
	}
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
