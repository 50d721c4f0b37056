package tools_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/builtin/tools"
)

func grepTree(t *testing.T) string {
	return writeTree(t, map[string]string{
		".gitignore":          "*.log\n/build/\nvendor/\n!important.log\n",
		"main.go":             "package main\n\nfunc main() {\n\tNewReader()\n}\n",
		"reader.go":           "package main\n\n// NewReader makes a reader.\nfunc NewReader() {}\n",
		"sub/.gitignore":      "secret.txt\n!keep.log\n",
		"sub/a.txt":           "newreader in lower case\nNEWREADER upper\n",
		"sub/secret.txt":      "NewReader hidden\n",
		"sub/keep.log":        "NewReader kept by a nested negation\n",
		"sub/deep/b.go":       "x := NewReader()\n",
		"app.log":             "NewReader in a log\n",
		"important.log":       "NewReader important\n",
		"build/out.go":        "NewReader built\n",
		"src/build/ok.go":     "NewReader not top-level build\n",
		"vendor/v.go":         "NewReader vendored\n",
		"sub/vendor/v.go":     "NewReader vendored deeper\n",
		".git/config":         "NewReader in git\n",
		"crlf.txt":            "NewReader\r\nnext\r\n",
		"bin.dat":             "NewReader\x00binary\n",
		".hidden/h.go":        "NewReader hidden dir\n",
		"long.txt":            "NewReader " + strings.Repeat("é", 400) + "\n",
		"docs/guide.md":       "Use NewReader.\n",
		"docs/sub/x.go":       "NewReader docs code\n",
		"unicode/ünï.txt":     "NewReader ünïcode\n",
		"empty.txt":           "",
		"src/build/other.txt": "nothing here\n",
	})
}

func TestGrep(t *testing.T) {
	dir := grepTree(t)
	longLine := "long.txt:1:NewReader " + strings.Repeat("é", 145) + " [...]"
	tests := []struct {
		name, args string
		want       []string
	}{
		{"whole tree", `{"pattern":"NewReader"}`, []string{
			".hidden/h.go:1:NewReader hidden dir",
			"crlf.txt:1:NewReader",
			"docs/guide.md:1:Use NewReader.",
			"docs/sub/x.go:1:NewReader docs code",
			"important.log:1:NewReader important",
			longLine,
			"main.go:4:\tNewReader()",
			"reader.go:3:// NewReader makes a reader.",
			"reader.go:4:func NewReader() {}",
			"src/build/ok.go:1:NewReader not top-level build",
			"sub/deep/b.go:1:x := NewReader()",
			"sub/keep.log:1:NewReader kept by a nested negation",
			"unicode/ünï.txt:1:NewReader ünïcode",
		}},
		{"ignore case in sub", `{"pattern":"newreader","path":"sub","ignore_case":true}`, []string{
			"sub/a.txt:1:newreader in lower case",
			"sub/a.txt:2:NEWREADER upper",
			"sub/deep/b.go:1:x := NewReader()",
			"sub/keep.log:1:NewReader kept by a nested negation",
		}},
		{"absolute path inside", fmt.Sprintf(`{"pattern":"NewReader","path":%q}`, filepath.Join(dir, "sub", "deep")), []string{
			"sub/deep/b.go:1:x := NewReader()",
		}},
		{"sub walk honours root .gitignore", `{"pattern":"vendored","path":"sub"}`, []string{"no matches"}},
		{"explicit ignored file", `{"pattern":"NewReader","path":"app.log"}`, []string{"app.log:1:NewReader in a log"}},
		{"explicit ignored dir", `{"pattern":"NewReader","path":"vendor"}`, []string{"vendor/v.go:1:NewReader vendored"}},
		{"glob on name", `{"pattern":"NewReader","glob":"*.go"}`, []string{
			".hidden/h.go:1:NewReader hidden dir",
			"docs/sub/x.go:1:NewReader docs code",
			"main.go:4:\tNewReader()",
			"reader.go:3:// NewReader makes a reader.",
			"reader.go:4:func NewReader() {}",
			"src/build/ok.go:1:NewReader not top-level build",
			"sub/deep/b.go:1:x := NewReader()",
		}},
		{"glob on path", `{"pattern":"NewReader","glob":"docs/**"}`, []string{
			"docs/guide.md:1:Use NewReader.",
			"docs/sub/x.go:1:NewReader docs code",
		}},
		{"glob with braces", `{"pattern":"NewReader","glob":"*.{md,log}"}`, []string{
			"docs/guide.md:1:Use NewReader.",
			"important.log:1:NewReader important",
			"sub/keep.log:1:NewReader kept by a nested negation",
		}},
		{"regex", `{"pattern":"^func \\w+\\(\\)","path":"reader.go"}`, []string{"reader.go:4:func NewReader() {}"}},
		{"alternation", `{"pattern":"makes|main\\(","glob":"*.go"}`, []string{
			"main.go:3:func main() {",
			"reader.go:3:// NewReader makes a reader.",
		}},
		{"no matches", `{"pattern":"nowhere to be found"}`, []string{"no matches"}},
		{"max results", `{"pattern":"NewReader","max_results":3}`, []string{
			".hidden/h.go:1:NewReader hidden dir",
			"crlf.txt:1:NewReader",
			"docs/guide.md:1:Use NewReader.",
			"... 10 more matches not shown; narrow the pattern or raise max_results",
		}},
		{"max results clamped", `{"pattern":"reader","path":"reader.go","max_results":999999}`, []string{
			"reader.go:3:// NewReader makes a reader.",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := mustCall(t, tools.Grep(), dir, tt.args)
			assert.Equal(t, strings.Join(tt.want, "\n"), out)
		})
	}
}

func TestGrepErrors(t *testing.T) {
	dir := grepTree(t)
	tests := []struct{ args, want string }{
		{`{"pattern":"(unclosed"}`, "bad pattern \"(unclosed\": missing closing ): `(unclosed`"},
		{`{"pattern":"a{2,1}"}`, "invalid repeat count"},
		{`{"pattern":"x","path":"../"}`, "outside the root"},
		{`{"pattern":"x","path":"/etc"}`, "outside the root"},
		{`{"pattern":"x","path":"nope"}`, "does not exist"},
		{`{"pattern":"x","path":"bin.dat"}`, "bin.dat is a binary file"},
		{`{"pattern":"x","glob":"[unclosed"}`, "bad glob"},
		{`{"pattern":"x","max_results":-1}`, "max_results must be between 1 and 2000"},
		{`{"pattern":"` + strings.Repeat("x", 4097) + `"}`, "the pattern is 4097 bytes; give at most 4096"},
	}
	for _, tt := range tests {
		t.Run(tt.args[:min(len(tt.args), 40)], func(t *testing.T) {
			_, err := call(t, tools.Grep(), dir, tt.args)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestGrepTooLarge(t *testing.T) {
	dir := writeTree(t, map[string]string{"small.txt": "needle\n"})
	f, err := os.Create(filepath.Join(dir, "huge.txt"))
	require.NoError(t, err)
	_, err = f.WriteString("needle\n")
	require.NoError(t, err)
	require.NoError(t, f.Truncate(9<<20)) // sparse: cheap to make
	require.NoError(t, f.Close())

	assert.Equal(t, "small.txt:1:needle", mustCall(t, tools.Grep(), dir, `{"pattern":"needle"}`))
	_, err = call(t, tools.Grep(), dir, `{"pattern":"needle","path":"huge.txt"}`)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "larger than 8 MiB")
}

// The walk runs in parallel; the output must not depend on it.
func TestGrepDeterministic(t *testing.T) {
	files := map[string]string{}
	for i := range 300 {
		files[fmt.Sprintf("d%d/e%d/f%03d.txt", i%7, i%5, i)] = strings.Repeat(fmt.Sprintf("line %d match\nother\n", i), 1+i%4)
	}
	dir := writeTree(t, files)
	first := mustCall(t, tools.Grep(), dir, `{"pattern":"match","max_results":150}`)
	assert.Contains(t, first, "... 600 more matches not shown")
	lines := strings.Split(first, "\n")
	assert.Len(t, lines, 151)
	for range 10 {
		assert.Equal(t, first, mustCall(t, tools.Grep(), dir, `{"pattern":"match","max_results":150}`))
	}
	all := mustCall(t, tools.Grep(), dir, `{"pattern":"match","max_results":2000}`)
	assert.Equal(t, strings.Join(lines[:150], "\n"), strings.Join(strings.Split(all, "\n")[:150], "\n"),
		"the first lines shown must be the first lines overall")
}

func TestGrepStaysInsideRoot(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs symlinks and FIFOs")
	}
	base := t.TempDir()
	dir := filepath.Join(base, "root")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(base, "passwd"), []byte("root:secret\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "ok.txt"), []byte("not secret\n"), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(base, "passwd"), filepath.Join(dir, "passwd")))
	require.NoError(t, os.Symlink(base, filepath.Join(dir, "up")))
	require.NoError(t, os.Symlink("..", filepath.Join(dir, "sub", "loop")))
	mkfifo(t, filepath.Join(dir, "pipe"))

	done := make(chan string, 1)
	go func() {
		out, err := call(t, tools.Grep(), dir, `{"pattern":"secret"}`)
		assert.NoError(t, err)
		done <- out
	}()
	select {
	case out := <-done:
		assert.Equal(t, "sub/ok.txt:1:not secret", out)
	case <-time.After(10 * time.Second):
		t.Fatal("grep blocked (FIFO?) or looped (symlink?)")
	}
	_, err := call(t, tools.Grep(), dir, `{"pattern":"secret","path":"passwd"}`)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "outside the root")
	_, err = call(t, tools.Grep(), dir, `{"pattern":"secret","path":"up"}`)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "outside the root")
	_, err = call(t, tools.Grep(), dir, `{"pattern":"secret","path":"pipe"}`)
	require.Error(t, err)
}

func TestGrepCancelled(t *testing.T) {
	files := map[string]string{}
	for i := range 200 {
		files[fmt.Sprintf("f%d.txt", i)] = strings.Repeat("abc\n", 1000)
	}
	dir := writeTree(t, files)
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	<-ctx.Done()
	_, err := callCtx(ctx, tools.Grep(), dir, `{"pattern":"abc"}`)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}
