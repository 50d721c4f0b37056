package tools

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// How edit shows the lines closest to an old_string it did not find.
const (
	// nearShown bounds the lines shown.
	nearShown = 30
	// nearLineCut cuts each line shown, as grep cuts its lines.
	nearLineCut = 300
	// nearAnchors is how many lines of old_string (the longest) are
	// looked for in the whole file; windows are scored only where one
	// of them comes close, so the search stays linear in the file.
	nearAnchors = 4
	// nearCandidates is how many places per anchor are scored.
	nearCandidates = 5
	// nearScored bounds the lines of old_string a window is scored on.
	nearScored = 60
	// nearMinScore is the score under which nothing is called close.
	nearMinScore = 0.3
	// nearSpaceBudget bounds the line comparisons of the whitespace
	// check, so a file of repeated lines cannot make it quadratic.
	nearSpaceBudget = 1 << 21
)

// notFound is edit's error for an old_string the file does not hold: it
// shows the file's closest lines, numbered, so the model can copy them.
func notFound(rel, text, old string) error {
	lines := splitLines(text)
	want := splitLines(strings.Trim(old, "\r\n"))
	if strings.TrimSpace(old) == "" {
		return fmt.Errorf("old_string (only whitespace) is not in %s; give the exact text to replace, with a line of content", rel)
	}
	if s, ok := matchIgnoringSpace(lines, want); ok {
		return fmt.Errorf("old_string is not in %s exactly, but %s hold it with different whitespace (indentation, spaces or line endings); copy the text exactly as shown here, without the line numbers:\n%s",
			rel, lineSpan(s+1, s+len(want)), numberedLines(lines, s, s+len(want)))
	}
	s, score := closestWindow(lines, want)
	if score < nearMinScore {
		return fmt.Errorf("old_string is not in %s, and no lines there look like it; read the file to see what it holds now", rel)
	}
	end := min(s+len(want), len(lines))
	return fmt.Errorf("old_string is not in %s. The closest lines are %s, shown below with a line around them; read them and copy the text exactly, whitespace included, without the line numbers:\n%s",
		rel, lineSpan(s+1, end), numberedLines(lines, max(s-1, 0), min(end+1, len(lines))))
}

func lineSpan(from, to int) string {
	if from >= to {
		return fmt.Sprintf("line %d", from)
	}
	return fmt.Sprintf("lines %d-%d", from, to)
}

// splitLines splits text into lines without their endings ("\n" or
// "\r\n"); a final line ending starts no further line.
func splitLines(text string) []string {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// numberedLines shows lines[from:to] as read shows lines, at most
// nearShown of them, each cut to nearLineCut bytes.
func numberedLines(lines []string, from, to int) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		if i-from == nearShown {
			fmt.Fprintf(&b, "... %d more lines; read the file from offset=%d for them", to-i, i+1)
			return b.String()
		}
		l := lines[i]
		if len(l) > nearLineCut {
			cut := nearLineCut
			for cut > 0 && !utf8.RuneStart(l[cut]) {
				cut--
			}
			l = l[:cut] + " [...]"
		}
		fmt.Fprintf(&b, "%6d\t%s\n", i+1, l)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// normalSpace collapses every run of whitespace to one space and trims
// the ends. Only ASCII whitespace counts, as in equalSpace and bigrams.
func normalSpace(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r < utf8.RuneSelf && isSpaceByte(byte(r)) }), " ")
}

// matchIgnoringSpace finds the first run of lines equal to want but for
// whitespace, and returns its index.
func matchIgnoringSpace(lines, want []string) (int, bool) {
	if len(want) == 0 || len(want) > len(lines) {
		return 0, false
	}
	norm := make([]string, len(want))
	for i, w := range want {
		norm[i] = normalSpace(w)
	}
	budget := nearSpaceBudget
	for s := 0; s+len(want) <= len(lines); s++ {
		j := 0
		for ; j < len(want) && budget > 0; j++ {
			budget--
			if !equalSpace(lines[s+j], norm[j]) {
				break
			}
		}
		if j == len(want) {
			return s, true
		}
		if budget <= 0 {
			break
		}
	}
	return 0, false
}

// closestWindow returns where in lines the run of len(want) lines most
// like want starts, and its score from 0 to 1. Windows are scored only
// where one of want's longest lines (its anchors) comes close to a line
// of the file.
func closestWindow(lines, want []string) (int, float64) {
	anchors := pickAnchors(want)
	if len(anchors) == 0 {
		return 0, 0
	}
	type place struct {
		start int
		sim   float64
	}
	best := make([][]place, len(anchors))
	sets := make([]bigrams, len(anchors))
	for k, j := range anchors {
		sets[k] = newBigrams(want[j], nil)
	}
	var buf bigrams
	for i, l := range lines {
		buf = newBigrams(l, buf[:0])
		for k, j := range anchors {
			sim := buf.dice(sets[k])
			if sim == 0 {
				continue
			}
			best[k] = append(best[k], place{i - j, sim})
			slices.SortStableFunc(best[k], func(a, b place) int { return cmpFloat(b.sim, a.sim) })
			best[k] = best[k][:min(len(best[k]), nearCandidates)]
		}
	}
	start, score := 0, -1.0
	for _, places := range best {
		for _, p := range places {
			if s := windowScore(lines, want, p.start); s > score || (s == score && p.start < start) {
				start, score = p.start, s
			}
		}
	}
	return max(start, 0), score
}

// pickAnchors returns the indices of want's longest distinct lines.
func pickAnchors(want []string) []int {
	idx := make([]int, 0, len(want))
	for i, w := range want {
		if len(strings.TrimSpace(w)) >= 2 {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		return len(strings.TrimSpace(want[b])) - len(strings.TrimSpace(want[a]))
	})
	var out []int
	for _, i := range idx {
		if len(out) == nearAnchors {
			break
		}
		if !slices.ContainsFunc(out, func(j int) bool { return normalSpace(want[j]) == normalSpace(want[i]) }) {
			out = append(out, i)
		}
	}
	return out
}

// windowScore is how alike want is to the lines from start on: the mean
// likeness of its first nearScored lines, one for one.
func windowScore(lines, want []string, start int) float64 {
	n := min(len(want), nearScored)
	var sum float64
	for j := range n {
		if i := start + j; i >= 0 && i < len(lines) {
			sum += newBigrams(lines[i], nil).dice(newBigrams(want[j], nil))
		}
	}
	return sum / float64(n)
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// bigrams are the sorted byte pairs of a line with its whitespace
// normalised, for the Dice coefficient: how much two lines share,
// whatever their indentation.
type bigrams []uint16

func newBigrams(line string, buf bigrams) bigrams {
	var prev byte
	n := 0
	add := func(c byte) {
		if n > 0 {
			buf = append(buf, uint16(prev)<<8|uint16(c))
		}
		prev = c
		n++
	}
	space := false
	for i := 0; i < len(line) && n < nearLineCut; i++ {
		if c := line[i]; isSpaceByte(c) {
			space = n > 0
		} else {
			if space {
				add(' ')
				space = false
			}
			add(c)
		}
	}
	if n == 1 {
		// One character: a pair with nothing, so that "}" matches "}".
		buf = append(buf, uint16(prev)<<8)
	}
	slices.Sort(buf)
	return buf
}

func isSpaceByte(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'
}

// equalSpace reports whether line, its whitespace normalised as
// normalSpace does, is norm; without allocating.
func equalSpace(line, norm string) bool {
	j := 0
	space := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		if isSpaceByte(c) {
			space = j > 0
			continue
		}
		if space {
			if j >= len(norm) || norm[j] != ' ' {
				return false
			}
			j++
			space = false
		}
		if j >= len(norm) || norm[j] != c {
			return false
		}
		j++
	}
	return j == len(norm)
}

// dice is 2×shared/(len(a)+len(b)): 1 for the same pairs, 0 for none
// shared.
func (a bigrams) dice(b bigrams) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	shared := 0
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] == b[j]:
			shared++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return 2 * float64(shared) / float64(len(a)+len(b))
}
