package tools

import (
	"regexp/syntax"
	"strings"
	"unicode"
)

// A classRun is a prefilter for patterns with no literal to search for,
// such as [A-Z][a-z]+[0-9]{4}: a sequence of byte classes that every match
// on a line must contain, in a row ([a-z][0-9][0-9][0-9][0-9] there).
// index scans for its least common class with a table lookup per byte and
// checks the others around each hit; the regexp then runs only on the
// lines that contain the run.
//
// Only ASCII classes take part: each matches exactly one byte, and an
// ASCII byte reads as itself however invalid the UTF-8 around it is.
// A class such as . or [^x] that takes non-ASCII runes ends a run. '\n'
// is dropped from every class, since a match on a line never holds one.
type classRun struct {
	classes []*byteClass
	anchor  int // index of the class scanned for
	// exact: the run is the whole pattern, without assertions: a line
	// matches if and only if it contains the run.
	exact bool
}

type byteClass [256]bool

// maxRunProb is the most likely (by byteProb) a run may be to start at a
// given byte and still serve as a prefilter: about one candidate in two
// lines of 64 bytes. A likelier run would send most lines to the regexp.
const maxRunProb = 1.0 / 128

// maxRunLen bounds a run; longer runs add little selectivity.
const maxRunLen = 16

// newClassRun returns the prefilter for a simplified regexp tree, or nil
// when it has no run selective enough.
func newClassRun(re *syntax.Regexp) *classRun {
	s := runShapeOf(re)
	if len(s.best) == 0 || runProb(s.best) > maxRunProb {
		return nil
	}
	r := &classRun{classes: s.best, exact: s.fixed && !s.loose && len(s.seq) == len(s.best)}
	for i, c := range r.classes {
		if classProb(c) < classProb(r.classes[r.anchor]) {
			r.anchor = i
		}
	}
	return r
}

// index returns the start of the first occurrence of the run in buf at or
// after from, or -1.
func (r *classRun) index(buf []byte, from int) int {
	n := len(r.classes)
	anchor := r.classes[r.anchor]
	for {
		at := from + r.anchor
		if at+n-r.anchor > len(buf) {
			return -1
		}
		i := indexClass(buf[at:], anchor)
		if i < 0 {
			return -1
		}
		s := at + i - r.anchor
		if s+n <= len(buf) && r.matchAt(buf[s:s+n]) {
			return s
		}
		from = s + 1
	}
}

func (r *classRun) matchAt(b []byte) bool {
	for i, c := range r.classes {
		if !c[b[i]] {
			return false
		}
	}
	return true
}

// indexClass returns the index of the first byte of b in c, or -1.
func indexClass(b []byte, c *byteClass) int {
	i := 0
	for ; i+4 <= len(b); i += 4 {
		if c[b[i]] || c[b[i+1]] || c[b[i+2]] || c[b[i+3]] {
			break
		}
	}
	for ; i < len(b); i++ {
		if c[b[i]] {
			return i
		}
	}
	return -1
}

// runShape is what runShapeOf learns about a subexpression: when fixed,
// every match is one byte of each of seq's classes in turn; otherwise
// every match starts with prefix and ends with suffix. best is the most
// selective run that every match contains.
type runShape struct {
	fixed          bool
	seq            []*byteClass
	prefix, suffix []*byteClass
	best           []*byteClass
	loose          bool // matches are not all runs of the classes: assertions, merged alternatives
}

var noRun = runShape{}

func fixedRun(seq []*byteClass) runShape {
	return runShape{fixed: true, seq: seq, prefix: seq, suffix: seq, best: seq}
}

func runShapeOf(re *syntax.Regexp) runShape {
	switch re.Op {
	case syntax.OpLiteral:
		subs := make([]runShape, len(re.Rune))
		for i, r := range re.Rune {
			subs[i] = noRun
			if c := runeClass(r, re.Flags&syntax.FoldCase != 0); c != nil {
				subs[i] = fixedRun([]*byteClass{c})
			}
		}
		return concatShapes(subs)
	case syntax.OpCharClass:
		c := new(byteClass)
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			if hi >= utf8RuneSelf {
				return noRun
			}
			for r := lo; r <= hi; r++ {
				c[r] = true
			}
		}
		c['\n'] = false
		return fixedRun([]*byteClass{c})
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return runShape{fixed: true, loose: true}
	case syntax.OpEmptyMatch:
		return runShape{fixed: true}
	case syntax.OpCapture:
		return runShapeOf(re.Sub[0])
	case syntax.OpPlus:
		return unfix(runShapeOf(re.Sub[0]))
	case syntax.OpRepeat: // Simplify leaves none; kept for safety
		if re.Min >= 1 {
			return unfix(runShapeOf(re.Sub[0]))
		}
		return noRun
	case syntax.OpConcat:
		subs := make([]runShape, len(re.Sub))
		for i, sub := range re.Sub {
			subs[i] = runShapeOf(sub)
		}
		return concatShapes(subs)
	case syntax.OpAlternate:
		subs := make([]runShape, len(re.Sub))
		for i, sub := range re.Sub {
			subs[i] = runShapeOf(sub)
		}
		return alternateShapes(subs)
	}
	return noRun // ., *, ?, non-ASCII classes: anything may come
}

const utf8RuneSelf = 0x80

// runeClass returns the bytes that match r (with its case folds when fold),
// or nil when any of them is not ASCII.
func runeClass(r rune, fold bool) *byteClass {
	if r >= utf8RuneSelf {
		return nil
	}
	c := new(byteClass)
	c[r] = true
	if fold {
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f >= utf8RuneSelf {
				return nil // k and s fold to the Kelvin sign and long s
			}
			c[f] = true
		}
	}
	c['\n'] = false
	return c
}

// unfix is the shape of one or more repetitions of s.
func unfix(s runShape) runShape {
	return runShape{prefix: s.prefix, suffix: s.suffix, best: s.best, loose: s.loose}
}

func concatShapes(subs []runShape) runShape {
	out := runShape{fixed: true}
	var cur []*byteClass // the run being built
	closed := false      // out.prefix is known
	for _, s := range subs {
		out.loose = out.loose || s.loose
		if s.fixed {
			cur = append(cur, s.seq...)
			continue
		}
		cur = append(cur, s.prefix...)
		if !closed {
			out.prefix, closed = cur, true
		}
		out.best = betterRun(out.best, cur)
		out.best = betterRun(out.best, s.best)
		cur = append([]*byteClass(nil), s.suffix...)
	}
	out.best = betterRun(out.best, cur)
	if !closed {
		out.seq, out.prefix = cur, cur
	} else {
		out.fixed = false
	}
	out.suffix = cur
	return out
}

// alternateShapes merges the alternatives position by position: from the
// start over their shortest prefix, from the end over their shortest
// suffix, and over the whole when all are fixed and of one length.
func alternateShapes(subs []runShape) runShape {
	if len(subs) == 0 {
		return noRun
	}
	out := runShape{fixed: true, loose: len(subs) > 1}
	np, ns := len(subs[0].prefix), len(subs[0].suffix)
	for _, s := range subs {
		out.loose = out.loose || s.loose
		out.fixed = out.fixed && s.fixed && len(s.seq) == len(subs[0].seq)
		np, ns = min(np, len(s.prefix)), min(ns, len(s.suffix))
	}
	union := func(n int, pick func(s runShape, i int) *byteClass) []*byteClass {
		seq := make([]*byteClass, n)
		for i := range seq {
			c := new(byteClass)
			for _, s := range subs {
				for b, in := range pick(s, i) {
					c[b] = c[b] || in
				}
			}
			seq[i] = c
		}
		return seq
	}
	if out.fixed {
		out.seq = union(len(subs[0].seq), func(s runShape, i int) *byteClass { return s.seq[i] })
		out.prefix, out.suffix, out.best = out.seq, out.seq, out.seq
		return out
	}
	out.prefix = union(np, func(s runShape, i int) *byteClass { return s.prefix[i] })
	out.suffix = union(ns, func(s runShape, i int) *byteClass { return s.suffix[len(s.suffix)-ns+i] })
	out.best = betterRun(out.prefix, out.suffix)
	return out
}

// betterRun returns the less likely of two runs (a on ties), cut to
// maxRunLen classes.
func betterRun(a, b []*byteClass) []*byteClass {
	if len(b) > maxRunLen {
		b = trimRun(b)
	}
	if len(a) > maxRunLen {
		a = trimRun(a)
	}
	if len(b) > 0 && (len(a) == 0 || runProb(b) < runProb(a)) {
		return b
	}
	return a
}

// trimRun keeps the maxRunLen classes of r that are least likely together.
func trimRun(r []*byteClass) []*byteClass {
	best := r[:maxRunLen]
	for i := 1; i+maxRunLen <= len(r); i++ {
		if w := r[i : i+maxRunLen]; runProb(w) < runProb(best) {
			best = w
		}
	}
	return best
}

// runProb estimates how likely the run is to start at a given byte of
// source code or prose.
func runProb(r []*byteClass) float64 {
	p := 1.0
	for _, c := range r {
		p *= classProb(c)
	}
	return p
}

func classProb(c *byteClass) float64 {
	p := 0.0
	for b, in := range c {
		if in {
			p += byteProb(byte(b))
		}
	}
	return min(p, 1)
}

// byteProb estimates the frequency of a byte in source code and prose from
// its rank in commonBytes (about Zipf's law), with small constants for
// unlisted letters, digits and the rest.
func byteProb(c byte) float64 {
	if i := strings.IndexByte(commonBytes, c); i >= 0 {
		return 0.16 / float64(i+1)
	}
	switch {
	case 'A' <= c && c <= 'Z':
		return 0.002
	case '0' <= c && c <= '9':
		return 0.002
	}
	return 0.0005
}
