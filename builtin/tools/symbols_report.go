package tools

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/troupe-dev/troupe/builtin/outline"
)

// symbolsMaxDoc is the most runes of a doc comment's first sentence
// shown.
const symbolsMaxDoc = 160

// symbolHit is a declaration that matched, with how.
type symbolHit struct {
	rel   string
	d     *outline.Decl
	m     declMatch
	body  bodyMatch
	score float64
}

// report is the tool's output: the header, the declarations that match
// best first, and the notes.
func (sc *symbolScan) report(c symbolsCall) string {
	hits, counts, total, files := sc.match(c)
	relevance(hits, counts, total)
	sortHits(hits)
	var b strings.Builder
	fmt.Fprintf(&b, "%s in %s; %d ", plural(total, "declaration", "declarations"), plural(files, "file", "files"), len(hits))
	if c.kind != 0 {
		fmt.Fprintf(&b, "%s ", strings.TrimPrefix(plural(len(hits), c.kind.String()+" declaration", c.kind.String()+" declarations"), strconv.Itoa(len(hits))+" "))
	}
	b.WriteString("match")
	for i, w := range c.words {
		sep := ", "
		if i == 0 {
			sep = ": "
		}
		fmt.Fprintf(&b, "%s%s %d", sep, w.text, counts[i])
	}
	for i, h := range hits {
		if i == c.max {
			fmt.Fprintf(&b, "\n... %d more matches not shown; narrow the query, path or kind, or raise max_results", len(hits)-i)
			break
		}
		b.WriteByte('\n')
		writeSymbol(&b, h.rel, h.d)
	}
	if len(hits) == 0 && total > 0 && len(c.words) > 0 {
		b.WriteString("\n... no declaration matches; try other words, or fewer")
	}
	b.WriteString(sc.notes(files))
	return b.String()
}

// match finds the declarations of the kind asked for that match the
// words (all of them when there are none), and counts, for the header,
// the declarations each word matches, the declarations scanned and the
// files they are in.
func (sc *symbolScan) match(c symbolsCall) (hits []symbolHit, counts []int, total, files int) {
	counts = make([]int, len(c.words))
	for i := range sc.files {
		f := &sc.files[i]
		if !f.scanned {
			continue
		}
		files++
		total += len(f.decls)
		for j := range f.decls {
			d := &f.decls[j]
			if c.kind != 0 && d.Kind != c.kind {
				continue
			}
			h := symbolHit{rel: f.rel, d: d}
			if f.bodies != nil {
				h.body = f.bodies[j]
			}
			if len(c.words) > 0 {
				var own bool
				h.m, own = matchDecl(d, c.words)
				if !own && h.body.tf == nil {
					continue
				}
				for k, hit := range h.m.words {
					if hit || h.body.tf != nil && h.body.tf[k] > 0 {
						counts[k]++
					}
				}
			}
			hits = append(hits, h)
		}
	}
	return hits, counts, total, files
}

// writeSymbol writes one declaration's line: path:start-end kind name
// signature — the doc's first sentence.
func writeSymbol(b *strings.Builder, rel string, d *outline.Decl) {
	b.WriteString(QuotePath(rel))
	fmt.Fprintf(b, ":%d-%d %s %s", d.Line, d.End, d.Kind, quoteName(d.Qualified))
	if sig := cleanText(d.Signature); sig != "" {
		b.WriteByte(' ')
		b.WriteString(strings.ReplaceAll(sig, " — ", " - "))
	}
	if doc := cleanText(outline.FirstSentence(d.Doc)); doc != "" {
		b.WriteString(" — ")
		b.WriteString(clipRunes(doc, symbolsMaxDoc))
	}
}

// cleanText makes s one line of valid UTF-8 without control characters.
func cleanText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	return strings.TrimSpace(s)
}

// clipRunes cuts s to at most n runes, ending a cut text with "…".
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return strings.TrimSpace(string([]rune(s)[:n-1])) + "…"
}

// quoteName returns a declaration's name as is, or Go-quoted when it
// would not read back as one word: empty, with white space or control
// characters, bytes that are not UTF-8, or a leading '"'.
func quoteName(name string) string {
	if name == "" || !utf8.ValidString(name) || strings.HasPrefix(name, `"`) ||
		strings.ContainsFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return strconv.Quote(name)
	}
	return name
}

// notes are the lines that say what was left out, each with its
// leading newline.
func (sc *symbolScan) notes(files int) string {
	var b strings.Builder
	if files == 0 && sc.overCap == 0 {
		b.WriteString("\n... no source files here that symbols reads (Go, Python, JavaScript/TypeScript, Rust, Java, C)")
	}
	var out []string
	for _, n := range []struct {
		k         int
		one, many string
	}{
		{sc.testFiles, "test file", "test files"}, {sc.testDirs, "test directory", "test directories"},
		{sc.vendorDirs, "vendored directory", "vendored directories"}, {sc.generated, "generated file", "generated files"},
	} {
		if n.k > 0 {
			out = append(out, plural(n.k, n.one, n.many))
		}
	}
	if len(out) > 0 {
		fmt.Fprintf(&b, "\n... left out: %s; name one as path to include it", strings.Join(out, ", "))
	}
	if sc.tooLarge > 0 {
		fmt.Fprintf(&b, "\n... %s over %d MiB not outlined", plural(sc.tooLarge, "file", "files"), symbolsMaxFileSize>>20)
	}
	if sc.overCap > 0 {
		fmt.Fprintf(&b, "\n... stopped at %d files (a call reads at most %d files or %d MiB): %d more not scanned; give a narrower path",
			len(sc.files), symbolsMaxFiles, symbolsMaxBytes>>20, sc.overCap)
	}
	if sc.failed > 0 {
		fmt.Fprintf(&b, "\n... %s could not be outlined (a bug in troupe; it is logged)", plural(sc.failed, "file", "files"))
	}
	b.WriteString(depthNote(sc.walk, "scanned"))
	return b.String()
}
