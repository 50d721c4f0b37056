package tools_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/builtin/tools"
)

// oddNames are file names that a plain "path:line:text" line cannot
// carry: the OS must accept them, so some are skipped where it does not.
var oddNames = []string{"a:b.go", "we\nird.go", "bad\xff\xfename.go", `"quoted".go`, "... dots.go", " lead.go", "tab\tname.go", "no matches"}

func writeOddTree(t *testing.T) (string, []string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("Windows refuses these file names")
	}
	dir := t.TempDir()
	var names []string
	for _, n := range append([]string{"plain.go", "sub/x.go"}, oddNames...) {
		p := filepath.Join(dir, filepath.FromSlash(n))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		if err := os.WriteFile(p, []byte("one\nfind me: here\n"), 0o644); err != nil {
			t.Logf("skipping name %q: %v", n, err)
			continue
		}
		names = append(names, n)
	}
	return dir, names
}

func TestQuotePathRoundTrip(t *testing.T) {
	for _, p := range append([]string{"plain.go", "dir/ünïcode.go", "a b/c.go", `back\slash.go`}, oddNames...) {
		q := tools.QuotePath(p)
		ms := tools.ParseGrep(q + ":7:text: with colons")
		require.Len(t, ms, 1, q)
		assert.Equal(t, tools.Match{Path: p, Line: 7, Text: "text: with colons"}, ms[0])
		assert.Equal(t, []string{p}, tools.ParseGlob(q+"\n... 3 more files not shown; narrow the pattern or path"))
	}
	assert.Equal(t, "plain.go", tools.QuotePath("plain.go"))
	assert.Equal(t, `"a:b.go"`, tools.QuotePath("a:b.go"))
	assert.Equal(t, `"we\nird.go"`, tools.QuotePath("we\nird.go"))
	assert.Equal(t, `"\xff.go"`, tools.QuotePath("\xff.go"))
}

// grep and glob print every name so that ParseGrep and ParseGlob give
// back the exact path of a file that exists.
func TestGrepAndGlobOddNames(t *testing.T) {
	dir, names := writeOddTree(t)
	out := mustCall(t, tools.Grep(), dir, `{"pattern":"find me"}`)
	ms := tools.ParseGrep(out)
	var got []string
	for _, m := range ms {
		got = append(got, m.Path)
		assert.Equal(t, 2, m.Line, m.Path)
		assert.Equal(t, "find me: here", m.Text, m.Path)
		_, err := os.Stat(filepath.Join(dir, filepath.FromSlash(m.Path)))
		assert.NoError(t, err, "grep printed %q", m.Path)
	}
	assert.ElementsMatch(t, names, got, out)

	out = mustCall(t, tools.Glob(), dir, `{"pattern":"**"}`)
	assert.ElementsMatch(t, names, tools.ParseGlob(out), out)
}

func TestParseGrepSkipsNotes(t *testing.T) {
	out := "a.go:3:x\n\"b:c.go\":4:y:z\n... 5 more matches not shown; narrow the pattern or raise max_results\n" +
		"... 1 directory more than 256 levels below the path was not searched"
	assert.Equal(t, []tools.Match{{Path: "a.go", Line: 3, Text: "x"}, {Path: "b:c.go", Line: 4, Text: "y:z"}}, tools.ParseGrep(out))
	assert.Empty(t, tools.ParseGrep("no matches"))
	assert.Empty(t, tools.ParseGlob("no files match"))
	assert.Empty(t, tools.ParseGrep("\"unterminated:3:x"))
}
