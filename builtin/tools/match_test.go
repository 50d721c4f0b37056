package tools

import (
	"math/rand/v2"
	"regexp"
	"regexp/syntax"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type hit struct {
	n    int
	text string
}

// naive is the reference: split into lines, match each alone.
func naive(t *testing.T, pattern string, ignoreCase bool, text string) []hit {
	flags := "(?m)"
	if ignoreCase {
		flags = "(?mi)"
	}
	re := regexp.MustCompile(flags + pattern)
	var out []hit
	if text == "" {
		return nil // an empty file has no lines
	}
	lines := strings.Split(text, "\n")
	if strings.HasSuffix(text, "\n") {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		if re.MatchString(l) {
			out = append(out, hit{i + 1, strings.TrimSuffix(l, "\r")})
		}
	}
	return out
}

func scanAll(t *testing.T, pattern string, ignoreCase bool, text string) []hit {
	m, err := newMatcher(pattern, ignoreCase)
	require.NoError(t, err)
	var out []hit
	m.scan([]byte(text), &scanState{}, func(n int, line []byte) bool {
		out = append(out, hit{n, string(line)})
		return true
	})
	return out
}

// scanTexts are the texts the scan tests search.
var scanTexts = []string{
	"",
	"\n",
	"foo",
	"foo\n",
	"a\nfoo bar\n\nbaz foo\nFOO\r\nfoo",
	"first line\nsecond Foo line\nthird\nfoo\nbar\nfoofoo foo\n",
	"func (s *Server) ServeHTTP(w, r) {\n\treturn nil\n}\nfunc (c *client) Serve() {}\n",
	"TODO: x\nnothing\nFIXME y\nXXX z\ntodo lower\n",
	"Kelvin \u212a here\nlong \u017f s\nplain k and s\nKS\n",
	"tabs\tand  spaces\nend$\n^start\n",
	"x\xff\xfey invalid utf8\nfoo\xffbar\n",
	"line one\nline two\n\n\nline five\n",
	"Reader2024 x\nfoo1234bar\nAb12345\n 2024\nabc\xff1234\nab\ncd12\nad12\nx99 9\n12\n34\n",
	"mixed 1A2 and B3C\n",
	"Kelvin\u212a2024 sK1234\n\u212a\u017f12 ab\r\nZz0000\r\nabc 12 345\n",
}

func TestScanMatchesNaive(t *testing.T) {
	texts := scanTexts
	patterns := []struct {
		p  string
		ic bool
	}{
		{"foo", false}, {"foo", true}, {"FOO", true}, {"o", false}, {"foo bar", false},
		{"^foo$", false}, {"^foo", false}, {"foo$", false}, {"foo|bar", false}, {"(foo|bar)+", false},
		{`\bfoo\b`, false}, {`foo\s+bar`, false}, {`o\sb`, false}, {`line\s+\w+`, false}, {"[^x]+", false},
		{"x*", false}, {"^$", false}, {"^", false}, {"$", false}, {".", false}, {`\n`, false},
		{`Serve\w*\(`, false}, {`func \(\w+ \*?[A-Z]\w*\) Serve\w*\(`, false}, {"TODO|FIXME|XXX", false},
		{"todo|fixme", true}, {"k", true}, {"s", true}, {"kelvin", true}, {"ks", true},
		{"(Fo|Ba)(o|r)", false}, {"(?i)foo", false}, {"[fF]oo", false}, {"f[aeiou]o", false},
		{"\u212a", false}, {"\u212a", true}, {`\x{FFFD}`, false}, {`foo\x{FFFD}bar`, false}, {`e\t`, false},
		{"line (one|two|five)", false}, {"(?s)foo.bar", false}, {`[[:upper:]]{2,}`, false}, {"ſ", true},
	}
	for _, p := range patterns {
		for ti, text := range texts {
			want := naive(t, p.p, p.ic, text)
			got := scanAll(t, p.p, p.ic, text)
			assert.Equal(t, want, got, "pattern %q ic=%v text #%d %q", p.p, p.ic, ti, text)
		}
	}
}

func TestScanRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	alphabet := []string{"a", "b", "A", "B", "ab", "AB", "\n", "\n", " ", "\r\n", "k", "K", "\u212a", "s", "ſ", "x"}
	patterns := []struct {
		p  string
		ic bool
	}{
		{"ab", false}, {"ab", true}, {"a|b", false}, {"ab|ba", true}, {"(ab)+b", false},
		{"ks", true}, {"ak", true}, {`a\s+b`, false}, {"^ab", false}, {"ba$", true}, {"a[^b]a", false},
	}
	for range 300 {
		var sb strings.Builder
		for range rng.IntN(60) {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		text := sb.String()
		for _, p := range patterns {
			assert.Equal(t, naive(t, p.p, p.ic, text), scanAll(t, p.p, p.ic, text), "pattern %q ic=%v text %q", p.p, p.ic, text)
		}
	}
}

// TestScanRunMatchesNaive checks the class run prefilter against the
// reference, with patterns that have no literal to search for.
func TestScanRunMatchesNaive(t *testing.T) {
	patterns := []struct {
		p  string
		ic bool
	}{
		{`[A-Z][a-z]+[0-9]{4}\b`, false}, {`[A-Z][a-z]+[0-9]{4}\b`, true}, {`[0-9]{4}`, false}, {`\d{2}$`, false},
		{`^\d\d`, false}, {`[a-z]\d{2}`, true}, {`[0-9]{3}|[A-F]{3}`, false}, {`[a-z]\s\d{2}`, false},
		{`\s\d{2}`, false}, {`\d+\s+\d{3}`, false}, {`[[:upper:]]{3,}`, false}, {`\w\d{2,}\b`, false},
		{`[^a]\d{4}`, false}, {`[0-9]{2}\s[0-9]{2}`, false},
	}
	for _, p := range patterns {
		m, err := newMatcher(p.p, p.ic)
		require.NoError(t, err)
		require.Nil(t, m.lits, "pattern %q", p.p)
		require.NotNil(t, m.run, "pattern %q", p.p)
		for ti, text := range scanTexts {
			assert.Equal(t, naive(t, p.p, p.ic, text), scanAll(t, p.p, p.ic, text), "pattern %q ic=%v text #%d %q", p.p, p.ic, ti, text)
		}
	}

	rng := rand.New(rand.NewPCG(3, 5))
	alphabet := []string{"a", "z", "B", "Y", "aB", "1", "23", "\n", "\n", " ", "\t", "\r\n", "k", "K", "\u212a", "s", "ſ", "\xff"}
	random := []struct {
		p  string
		ic bool
	}{
		{"[a-z][A-Z]{2}", false}, {"[a-f]{2}[0-9]", true}, {`[a-z]\s[A-Z]{2}`, false}, {`\b[A-Z]{3}\b`, false},
		{"[0-9]{2}[A-Z]+[0-9]{2}", false}, {"[0-9]{3}|[A-Z]{4}", false}, {`\s[0-9]{2}`, false}, {`[A-Z]{2}[a-z]`, false},
		{`[0-9]\s+[0-9]{2}`, false}, {`[^a]{2}[0-9]{3}`, false},
	}
	for _, p := range random {
		m, err := newMatcher(p.p, p.ic)
		require.NoError(t, err)
		require.Nil(t, m.lits, "pattern %q", p.p)
		require.NotNil(t, m.run, "pattern %q", p.p)
	}
	for range 300 {
		var sb strings.Builder
		for range rng.IntN(60) {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		text := sb.String()
		for _, p := range random {
			assert.Equal(t, naive(t, p.p, p.ic, text), scanAll(t, p.p, p.ic, text), "pattern %q ic=%v text %q", p.p, p.ic, text)
		}
	}
}

func TestScanStops(t *testing.T) {
	m, err := newMatcher("a", false)
	require.NoError(t, err)
	text := []byte(strings.Repeat("a\n", 10000))
	n := 0
	completed := m.scan(text, &scanState{stop: func() bool { return true }}, func(int, []byte) bool { n++; return true })
	assert.False(t, completed)
	assert.Less(t, n, 10000)

	n = 0
	m.scan(text, &scanState{}, func(int, []byte) bool { n++; return n < 3 })
	assert.Equal(t, 3, n)

	m, err = newMatcher("[0-9]{3}", false)
	require.NoError(t, err)
	require.NotNil(t, m.run, "the class run scanner is under test")
	text = []byte(strings.Repeat("123\n", 10000))
	n = 0
	completed = m.scan(text, &scanState{stop: func() bool { return true }}, func(int, []byte) bool { n++; return true })
	assert.False(t, completed)
	assert.Less(t, n, 10000)

	n = 0
	m.scan(text, &scanState{}, func(int, []byte) bool { n++; return n < 3 })
	assert.Equal(t, 3, n)
}

// runString writes a class run as classes of ranges, the anchor marked
// with a *.
func runString(r *classRun) string {
	var sb strings.Builder
	for i, c := range r.classes {
		sb.WriteByte('[')
		for b := 0; b < 256; b++ {
			if !c[b] || (b > 0 && c[b-1]) {
				continue
			}
			e := b
			for e+1 < 256 && c[e+1] {
				e++
			}
			sb.WriteString(regexp.QuoteMeta(string(rune(b))))
			if e > b {
				sb.WriteString("-" + regexp.QuoteMeta(string(rune(e))))
			}
		}
		sb.WriteByte(']')
		if i == r.anchor {
			sb.WriteByte('*')
		}
	}
	return sb.String()
}

func TestClassRun(t *testing.T) {
	tests := []struct {
		pattern string
		ic      bool
		run     string // "" for none
		exact   bool
	}{
		{`[A-Z][a-z]+[0-9]{4}\b`, false, "[a-z][0-9]*[0-9][0-9][0-9]", false},
		{`[0-9]{4}`, false, "[0-9]*[0-9][0-9][0-9]", true},
		{`[A-Z]{3,}`, false, "[A-Z]*[A-Z][A-Z]", false},
		{`\b[0-9]{4}`, false, "[0-9]*[0-9][0-9][0-9]", false},
		{`[0-9]{3}|[A-F]{3}`, false, "[0-9A-F]*[0-9A-F][0-9A-F]", false},
		{`.+[0-9]{4}`, false, "[0-9]*[0-9][0-9][0-9]", false},
		{`\s[0-9]{3}`, false, "[\t\f-\r ][0-9]*[0-9][0-9]", true},           // no \n: a match on a line holds none
		{`[A-Z]{20}`, false, "[A-Z]*" + strings.Repeat("[A-Z]", 15), false}, // cut to 16, so no longer exact
		{`[a-c]{2}\d`, true, "[A-Ca-c][A-Ca-c][0-9]*", true},
		{`[0-9]+`, false, "", false},  // too common to prefilter
		{`[a-z]+\d`, true, "", false}, // (?i)[a-z] holds the Kelvin sign
		{`[^a]\d{4}`, false, "[0-9]*[0-9][0-9][0-9]", false},
		{`\w*`, false, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			m, err := newMatcher(tt.pattern, tt.ic)
			require.NoError(t, err)
			require.Nil(t, m.lits, "no literal to search for")
			if tt.run == "" {
				assert.Nil(t, m.run)
				return
			}
			require.NotNil(t, m.run)
			assert.Equal(t, tt.run, runString(m.run))
			assert.Equal(t, tt.exact, m.run.exact)
		})
	}
}

func TestExtract(t *testing.T) {
	tests := []struct {
		pattern string
		ic      bool
		lits    []string
		exact   bool
	}{
		{"foo", false, []string{"foo"}, true},
		{"foo", true, []string{"foo"}, true},
		{"foo|bar", false, []string{"foo", "bar"}, true},
		{"(Read|Writ)er", false, []string{"Reader", "Writer"}, true},
		{`\w+Handler\(`, false, []string{"Handler("}, false},
		{`^foo$`, false, []string{"foo"}, false},
		{`foo.*barbaz`, false, []string{"barbaz"}, false},
		{`(foo)+`, false, []string{"foo"}, false},
		{`a|b*`, false, nil, false},
		{`\w+`, false, nil, false},
		{`x*`, false, nil, false},
		{"é", true, nil, false},
		{"a|b|c|d|e|f|g|h|i", false, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			m, err := newMatcher(tt.pattern, tt.ic)
			require.NoError(t, err)
			var got []string
			for _, l := range m.lits {
				got = append(got, string(l.s))
			}
			assert.Equal(t, tt.lits, got)
			if tt.lits != nil {
				assert.Equal(t, tt.exact, m.exact)
			}
		})
	}
}

func TestBadPattern(t *testing.T) {
	_, err := newMatcher("(foo", false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "missing closing ): `(foo`")
	assert.NotContains(t, err.Error(), "(?m)")
	_, err = syntax.Parse("a{1001}", syntax.Perl)
	require.Error(t, err)
}

// FuzzScanMatchesNaive checks scan, whichever prefilter the pattern gets,
// against matching each line alone.
func FuzzScanMatchesNaive(f *testing.F) {
	f.Add(`[A-Z][a-z]+[0-9]{4}\b`, false, "Reader2024 x\nfoo1234bar\n")
	f.Add(`[a-z]\s[0-9]{2}`, false, "a\n12\nb 34\r\n")
	f.Add(`[0-9]{3}|[A-F]{3}`, true, "1A2\nabc\n\xff123")
	f.Add(`TODO|FIXME`, true, "todo\nFixMe\n")
	f.Fuzz(func(t *testing.T, pattern string, ignoreCase bool, text string) {
		if _, err := regexp.Compile("(?m)" + pattern); err != nil {
			return
		}
		if _, err := syntax.Parse(pattern, syntax.Perl); err != nil {
			return // "(?m)" + pattern can parse where pattern alone does not
		}
		assert.Equal(t, naive(t, pattern, ignoreCase, text), scanAll(t, pattern, ignoreCase, text))
	})
}
