package tools

import (
	"bytes"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// matcher finds the lines of a buffer that match a pattern. It runs over
// the whole buffer at once and works out line numbers only around matches.
//
// Go's regexp has no DFA and is slow over large inputs, so when every match
// must contain one of a few literals (found with regexp/syntax), those are
// searched for first with memchr-speed byte scans, and the regexp runs only
// on the lines that contain one. When the pattern is nothing but those
// literals the regexp does not run at all. A pattern without such literals
// gets a run of byte classes to search for instead (see classRun).
type matcher struct {
	re *regexp.Regexp // (?m) so ^ and $ work per line over a whole buffer
	// lits is the prefilter: every match contains one of them. nil when
	// the pattern has no usable literal.
	lits []*literal
	// exact: a line matches if and only if it contains one of lits.
	exact bool
	// foldSpecial: some case-folded literal holds k or s, whose folds
	// include the non-ASCII K (Kelvin sign) and ſ (long s). The ASCII
	// prefilter would miss those, so files that contain them skip it.
	foldSpecial bool
	// run is the prefilter for patterns without literals (see classRun),
	// nil when there is none either.
	run *classRun
}

// maxLits bounds the prefilter's alternatives: each costs a scan.
const maxLits = 8

func newMatcher(pattern string, ignoreCase bool) (*matcher, error) {
	flags := "(?m)"
	if ignoreCase {
		flags = "(?mi)"
	}
	// Parsed once here for the prefilters, and once more by Compile.
	tree, err := syntax.Parse(flags+pattern, syntax.Perl)
	if err != nil {
		if _, alone := syntax.Parse(pattern, syntax.Perl); alone != nil {
			err = alone // its message quotes the pattern as given
		}
		msg := strings.TrimPrefix(err.Error(), "error parsing regexp: ")
		return nil, fmt.Errorf("bad pattern %q: %s (patterns are RE2 regular expressions; escape special characters such as ( [ . * + ? { | with \\)", pattern, msg)
	}
	re, err := regexp.Compile(flags + pattern)
	if err != nil {
		return nil, fmt.Errorf("bad pattern %q: %w", pattern, err)
	}
	m := &matcher{re: re}
	tree = tree.Simplify()
	if !m.useLiterals(extract(tree)) {
		*m = matcher{re: re, run: newClassRun(tree)}
	}
	return m, nil
}

// useLiterals sets up the literal prefilter from set, or reports that it
// cannot serve.
func (m *matcher) useLiterals(set *litSet) bool {
	if set == nil || len(set.lits) == 0 || len(set.lits) > maxLits {
		return false
	}
	m.exact = set.exact
	for _, l := range set.lits {
		if l.s == "" {
			return false // matches everywhere: no use
		}
		if strings.ContainsRune(l.s, utf8.RuneError) {
			// regexp reads invalid UTF-8 as U+FFFD; bytes would not.
			return false
		}
		if strings.Contains(l.s, "\n") {
			m.exact = false // never matches within a line; let the regexp say so
		}
		if l.fold && strings.ContainsAny(l.s, "ksKS") {
			m.foldSpecial = true
		}
		m.lits = append(m.lits, newLiteral(l.s, l.fold))
	}
	return true
}

// scanState is per-goroutine scratch for scan, reused across files.
type scanState struct {
	next []int    // per literal: start of its next occurrence, -1 none, -2 unknown
	curs []cursor // per literal: rare-byte scan positions
	stop func() bool
}

// scan calls emit with the 1-based number and the text (without the line
// ending) of each matching line of buf, in order, until emit returns false.
// st.stop, when set, is polled now and then; scan returns false when it
// says so.
func (m *matcher) scan(buf []byte, st *scanState, emit func(n int, line []byte) bool) bool {
	if len(buf) == 0 {
		return true
	}
	useLits := m.lits != nil
	if useLits && m.foldSpecial && (bytes.Contains(buf, kelvin) || bytes.Contains(buf, longS)) {
		useLits = false
	}
	if !useLits {
		if m.run != nil {
			return m.scanRun(buf, st, emit)
		}
		return m.scanRegexp(buf, st, emit)
	}
	st.next = st.next[:0]
	st.curs = st.curs[:0]
	for range m.lits {
		st.next = append(st.next, -2)
		st.curs = append(st.curs, cursor{-2, -2})
	}
	lineNo, counted := 1, 0
	for pos, iter := 0, 0; pos < len(buf); iter++ {
		if iter&1023 == 1023 && st.stop != nil && st.stop() {
			return false
		}
		c := -1
		for i, l := range m.lits {
			if st.next[i] == -1 {
				continue
			}
			if st.next[i] < pos {
				st.next[i] = l.index(buf, pos, &st.curs[i])
				if st.next[i] < 0 {
					continue
				}
			}
			if c < 0 || st.next[i] < c {
				c = st.next[i]
			}
		}
		if c < 0 {
			break
		}
		// pos is always a line start, so the candidate's line starts at
		// or after it.
		ls, le := lineAt(buf, pos, c)
		line := buf[ls:le]
		if m.exact || m.re.Match(line) {
			lineNo += bytes.Count(buf[counted:ls], newline)
			counted = ls
			if !emit(lineNo, trimCR(line)) {
				return true
			}
		}
		pos = le + 1
	}
	return true
}

// scanRun is scan with a class run as the prefilter.
func (m *matcher) scanRun(buf []byte, st *scanState, emit func(n int, line []byte) bool) bool {
	lineNo, counted := 1, 0
	for pos, iter := 0, 0; pos < len(buf); iter++ {
		if iter&1023 == 1023 && st.stop != nil && st.stop() {
			return false
		}
		c := m.run.index(buf, pos)
		if c < 0 {
			break
		}
		// The run holds no newline, so its line is the match's.
		ls, le := lineAt(buf, pos, c)
		line := buf[ls:le]
		if m.run.exact || m.re.Match(line) {
			lineNo += bytes.Count(buf[counted:ls], newline)
			counted = ls
			if !emit(lineNo, trimCR(line)) {
				return true
			}
		}
		pos = le + 1
	}
	return true
}

// scanRegexp is scan without a prefilter: the regexp runs over the whole
// buffer from one line start to the next match.
func (m *matcher) scanRegexp(buf []byte, st *scanState, emit func(n int, line []byte) bool) bool {
	lineNo, counted := 1, 0
	for pos, iter := 0, 0; pos < len(buf); iter++ {
		if iter&1023 == 1023 && st.stop != nil && st.stop() {
			return false
		}
		loc := m.re.FindIndex(buf[pos:])
		if loc == nil {
			break
		}
		s, e := pos+loc[0], pos+loc[1]
		if s == len(buf) && buf[s-1] == '\n' {
			break // an empty match after the final newline is not a line
		}
		ls, le := lineAt(buf, pos, s)
		line := buf[ls:le]
		// A match that runs past the line end (\s or [^x] can take a
		// newline) does not count unless the line matches on its own.
		if e <= le || m.re.Match(line) {
			lineNo += bytes.Count(buf[counted:ls], newline)
			counted = ls
			if !emit(lineNo, trimCR(line)) {
				return true
			}
		}
		pos = le + 1
	}
	return true
}

// lineAt returns the start and end of the line holding buf[at], given that
// pos, at or before it, is a line start.
func lineAt(buf []byte, pos, at int) (start, end int) {
	start = pos + bytes.LastIndexByte(buf[pos:at], '\n') + 1
	end = bytes.IndexByte(buf[at:], '\n')
	if end < 0 {
		return start, len(buf)
	}
	return start, end + at
}

var (
	newline = []byte{'\n'}
	kelvin  = []byte("\u212a")
	longS   = []byte("\u017f")
)

func trimCR(line []byte) []byte {
	if n := len(line); n > 0 && line[n-1] == '\r' {
		return line[:n-1]
	}
	return line
}

// literal is a byte string searched for by its rarest byte: memchr-speed
// scans (bytes.IndexByte) for that byte, then a compare around each hit.
// Case-folded literals (ASCII only) scan for both cases of the byte.
type literal struct {
	s      []byte // lower case when fold
	fold   bool
	rare   int  // index in s of the byte scanned for
	b1, b2 byte // the rare byte's forms; equal when it has one
}

// cursor remembers where the rare byte's two forms occur next, so that
// scanning for one form does not rescan what the other already passed.
type cursor struct{ p1, p2 int }

func newLiteral(s string, fold bool) *literal {
	l := &literal{s: []byte(s), fold: fold}
	if fold {
		l.s = bytes.ToLower(l.s)
	}
	best := -1
	for i, c := range l.s {
		f := byteFreq(c)
		if fold && isLowerASCII(c) {
			f += byteFreq(c - 32)
		}
		if best < 0 || f < best {
			best, l.rare = f, i
		}
	}
	l.b1, l.b2 = l.s[l.rare], l.s[l.rare]
	if fold && isLowerASCII(l.b1) {
		l.b2 = l.b1 - 32
	}
	return l
}

// index returns the start of the first occurrence of l in buf at or after
// from, or -1.
func (l *literal) index(buf []byte, from int, cur *cursor) int {
	n := len(l.s)
	for {
		at := from + l.rare // where the rare byte must be, at the earliest
		if at+n-l.rare > len(buf) {
			return -1
		}
		if cur.p1 != -1 && cur.p1 < at {
			cur.p1 = indexFrom(buf, at, l.b1)
		}
		p := cur.p1
		if l.b2 != l.b1 {
			if cur.p2 != -1 && cur.p2 < at {
				cur.p2 = indexFrom(buf, at, l.b2)
			}
			if p < 0 || (cur.p2 >= 0 && cur.p2 < p) {
				p = cur.p2
			}
		}
		if p < 0 {
			return -1
		}
		s := p - l.rare
		if s+n <= len(buf) && l.equal(buf[s:s+n]) {
			return s
		}
		from = s + 1
	}
}

func (l *literal) equal(b []byte) bool {
	if !l.fold {
		return bytes.Equal(b, l.s)
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 32
		}
		if c != l.s[i] {
			return false
		}
	}
	return true
}

func indexFrom(buf []byte, from int, c byte) int {
	if i := bytes.IndexByte(buf[from:], c); i >= 0 {
		return from + i
	}
	return -1
}

func isLowerASCII(c byte) bool { return 'a' <= c && c <= 'z' }

// byteFreq ranks how common a byte is in source code and prose: higher is
// more common. Bytes not listed (most punctuation, control and non-ASCII
// bytes) rank as rare.
func byteFreq(c byte) int {
	if i := strings.IndexByte(commonBytes, c); i >= 0 {
		return len(commonBytes) - i + 8
	}
	switch {
	case 'A' <= c && c <= 'Z':
		return 6
	case '0' <= c && c <= '9':
		return 4
	}
	return 0
}

// commonBytes lists bytes from most to least common in typical code.
const commonBytes = " etaoinsrlcdupmhfg\n\t.(),_bywv;=\"k:/x*{}-ESTRAIN'CDLPMFO0q1jz[]>&<2!#+|"

// litSet is what extract learns about a regexp: every match contains one
// of lits; exact means every match is exactly one of them.
type litSet struct {
	lits  []lit
	exact bool
}

type lit struct {
	s    string
	fold bool
}

// maxCross bounds the sets built by concatenating small alternatives
// (like (Read|Writ)er).
const maxCross = 16

// extract walks a simplified regexp tree. It returns nil when it cannot
// name literals that every match must contain.
func extract(re *syntax.Regexp) *litSet {
	switch re.Op {
	case syntax.OpLiteral:
		fold := re.Flags&syntax.FoldCase != 0
		s := string(re.Rune)
		if fold {
			for _, r := range re.Rune {
				if r >= utf8.RuneSelf {
					return nil // non-ASCII case folding: leave it to regexp
				}
			}
		}
		return &litSet{lits: []lit{{s, fold}}, exact: true}
	case syntax.OpCharClass:
		// A small class like [xy] or (?i)x: a few one-rune strings.
		var lits []lit
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				if len(lits) == 4 {
					return nil
				}
				lits = append(lits, lit{s: string(r)})
			}
		}
		if len(lits) == 0 {
			return nil
		}
		return &litSet{lits: lits, exact: true}
	case syntax.OpCapture:
		return extract(re.Sub[0])
	case syntax.OpPlus:
		if s := extract(re.Sub[0]); s != nil {
			return &litSet{lits: s.lits}
		}
		return nil
	case syntax.OpRepeat:
		if re.Min >= 1 {
			if s := extract(re.Sub[0]); s != nil {
				return &litSet{lits: s.lits}
			}
		}
		return nil
	case syntax.OpAlternate:
		out := &litSet{exact: true}
		for _, sub := range re.Sub {
			s := extract(sub)
			if s == nil {
				return nil
			}
			out.lits = append(out.lits, s.lits...)
			out.exact = out.exact && s.exact
		}
		if len(out.lits) > maxLits {
			return nil
		}
		return out
	case syntax.OpConcat:
		return extractConcat(re.Sub)
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary, syntax.OpEmptyMatch:
		// Zero width: contributes the empty string, but not exactly.
		return &litSet{lits: []lit{{}}}
	}
	return nil
}

// extractConcat builds cross products of runs of exact children and
// returns the best set among those and the other children's sets.
func extractConcat(subs []*syntax.Regexp) *litSet {
	var best *litSet
	consider := func(s *litSet) {
		if s != nil && better(s, best) {
			best = s
		}
	}
	var run *litSet // cross product of the current run of exact children
	allExact := true
	for _, sub := range subs {
		s := extract(sub)
		switch {
		case s == nil:
			allExact = false
			consider(run)
			run = nil
		case run == nil:
			run = s
			allExact = allExact && s.exact
		default:
			if p := cross(run, s); p != nil {
				run = p
				allExact = allExact && s.exact
			} else {
				allExact = false
				consider(run)
				run = s
			}
		}
		consider(s)
	}
	consider(run)
	if best != nil && best != run {
		best = &litSet{lits: best.lits} // a part of the concatenation
	}
	if best == run && best != nil && !allExact {
		best = &litSet{lits: best.lits}
	}
	return best
}

// cross concatenates every string of a with every string of b, or returns
// nil when the result would be too large.
func cross(a, b *litSet) *litSet {
	if len(a.lits)*len(b.lits) > maxCross {
		return nil
	}
	out := &litSet{exact: a.exact && b.exact}
	for _, x := range a.lits {
		for _, y := range b.lits {
			if x.fold != y.fold && x.s != "" && y.s != "" {
				out.exact = false // a folded set over case-sensitive text: a superset
			}
			out.lits = append(out.lits, lit{s: x.s + y.s, fold: x.fold || y.fold})
		}
	}
	return out
}

// better prefers the set whose shortest literal is longest, then the
// smaller set.
func better(a, b *litSet) bool {
	if b == nil {
		return minLen(a) > 0
	}
	ma, mb := minLen(a), minLen(b)
	if ma != mb {
		return ma > mb
	}
	return len(a.lits) < len(b.lits)
}

func minLen(s *litSet) int {
	m := -1
	for _, l := range s.lits {
		if m < 0 || len(l.s) < m {
			m = len(l.s)
		}
	}
	return m
}
