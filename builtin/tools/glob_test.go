package tools_test

import (
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

func TestGlob(t *testing.T) {
	// writeTree gives later paths (in sorted order) newer mtimes.
	dir := writeTree(t, map[string]string{
		".gitignore":            "gen/\n*.tmp\n",
		"a.go":                  "",
		"b.go":                  "",
		"cmd/tool/main.go":      "",
		"cmd/tool/main_test.go": "",
		"gen/x.go":              "",
		"lib/[odd]/x.go":        "",
		"lib/util.go":           "",
		"lib/util.tmp":          "",
		"lib/deep/er/y.go":      "",
		"docs/readme.md":        "",
		".git/HEAD":             "",
	})
	tests := []struct {
		name, args string
		want       []string
	}{
		{"all go files, newest first", `{"pattern":"**/*.go"}`, []string{
			"lib/util.go", "lib/deep/er/y.go", "lib/[odd]/x.go", "cmd/tool/main_test.go", "cmd/tool/main.go", "b.go", "a.go",
		}},
		{"top level only", `{"pattern":"*.go"}`, []string{"b.go", "a.go"}},
		{"under path", `{"pattern":"*.go","path":"lib"}`, []string{"lib/util.go"}},
		{"recursive under path", `{"pattern":"**/*.go","path":"lib"}`, []string{"lib/util.go", "lib/deep/er/y.go", "lib/[odd]/x.go"}},
		{"dir with glob characters", `{"pattern":"*.go","path":"lib/[odd]"}`, []string{"lib/[odd]/x.go"}},
		{"fixed part", `{"pattern":"cmd/*/main*.go"}`, []string{"cmd/tool/main_test.go", "cmd/tool/main.go"}},
		{"braces", `{"pattern":"**/*.{md,tmp}"}`, []string{"docs/readme.md"}},
		{"dot slash", `{"pattern":"./docs/*"}`, []string{"docs/readme.md"}},
		{"absolute", fmt.Sprintf(`{"pattern":%q}`, filepath.Join(dir, "cmd")+"/**/main.go"), []string{"cmd/tool/main.go"}},
		{"ignored dir named", `{"pattern":"gen/*.go"}`, []string{"gen/x.go"}},
		{"top level files, dot files too", `{"pattern":"*"}`, []string{"b.go", "a.go", ".gitignore"}},
		{"no match", `{"pattern":"**/*.rs"}`, []string{"no files match"}},
		{"missing fixed part", `{"pattern":"nowhere/**"}`, []string{"no files match"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, strings.Join(tt.want, "\n"), mustCall(t, tools.Glob(), dir, tt.args))
		})
	}
}

func TestGlobTiesAndCap(t *testing.T) {
	dir := t.TempDir()
	mt := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 510 {
		p := filepath.Join(dir, fmt.Sprintf("d%d", i%3), fmt.Sprintf("f%03d.txt", i))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, nil, 0o644))
		require.NoError(t, os.Chtimes(p, mt, mt))
	}
	out := mustCall(t, tools.Glob(), dir, `{"pattern":"**/*.txt"}`)
	lines := strings.Split(out, "\n")
	require.Len(t, lines, 501)
	assert.Equal(t, "d0/f000.txt", lines[0], "equal mtimes: by path")
	assert.Equal(t, "d0/f003.txt", lines[1])
	assert.Equal(t, "... 10 more files not shown; narrow the pattern or path", lines[500])
}

func TestGlobErrors(t *testing.T) {
	dir := writeTree(t, map[string]string{"a.go": ""})
	tests := []struct{ args, want string }{
		{`{"pattern":"[unclosed"}`, "bad pattern"},
		{`{"pattern":"*","path":"../"}`, "outside the root"},
		{`{"pattern":"/etc/*"}`, "outside the root"},
		{`{"pattern":"*","path":"missing"}`, "does not exist"},
		{`{"pattern":"*","path":"a.go"}`, "a.go is not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			_, err := call(t, tools.Glob(), dir, tt.args)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestGlobSymlinks(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs symlinks")
	}
	dir := writeTree(t, map[string]string{"real/a.txt": ""})
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.txt"), nil, 0o644))
	require.NoError(t, os.Symlink("real/a.txt", filepath.Join(dir, "link.txt")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "out.txt")))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "outdir")))
	require.NoError(t, os.Symlink("..", filepath.Join(dir, "real", "loop")))
	mkfifo(t, filepath.Join(dir, "pipe.txt"))
	out := mustCall(t, tools.Glob(), dir, `{"pattern":"**/*.txt"}`)
	assert.ElementsMatch(t, []string{"link.txt", "real/a.txt"}, strings.Split(out, "\n"))
}

func TestLs(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs symlinks and FIFOs")
	}
	dir := writeTree(t, map[string]string{
		"b.txt":       "hello",
		"a.go":        "",
		"sub/x":       "",
		".hidden":     "12",
		"empty/.keep": "",
	})
	require.NoError(t, os.Remove(filepath.Join(dir, "empty", ".keep")))
	require.NoError(t, os.Symlink("b.txt", filepath.Join(dir, "link")))
	mkfifo(t, filepath.Join(dir, "pipe"))
	tests := []struct{ args, want string }{
		{`{}`, ".hidden\t2\na.go\t0\nb.txt\t5\nempty/\nlink -> b.txt\npipe\t(named pipe)\nsub/"},
		{`{"path":"sub"}`, "x\t0"},
		{`{"path":"empty"}`, "(empty directory)"},
		{`{"path":"b.txt"}`, "b.txt\t5"},
		{fmt.Sprintf(`{"path":%q}`, filepath.Join(dir, "sub")), "x\t0"},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			assert.Equal(t, tt.want, mustCall(t, tools.Ls(), dir, tt.args))
		})
	}
	for _, bad := range []string{`{"path":".."}`, `{"path":"/"}`, `{"path":"nope"}`} {
		_, err := call(t, tools.Ls(), dir, bad)
		require.Error(t, err, bad)
	}
}

func TestLsCap(t *testing.T) {
	dir := t.TempDir()
	for i := range 1005 {
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d", i)), nil, 0o644))
	}
	lines := strings.Split(mustCall(t, tools.Ls(), dir, `{}`), "\n")
	require.Len(t, lines, 1001)
	assert.Equal(t, "... 5 more entries not shown; use glob to narrow", lines[1000])
}
