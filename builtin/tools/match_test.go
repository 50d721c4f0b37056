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

func TestScanMatchesNaive(t *testing.T) {
	texts := []string{
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
	}
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
