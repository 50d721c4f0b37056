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

func numbered(from, to int, text func(int) string) string {
	var lines []string
	for i := from; i <= to; i++ {
		lines = append(lines, fmt.Sprintf("%6d\t%s", i, text(i)))
	}
	return strings.Join(lines, "\n")
}

func TestRead(t *testing.T) {
	var many strings.Builder
	for i := 1; i <= 2500; i++ {
		fmt.Fprintf(&many, "line %d\n", i)
	}
	var wide strings.Builder
	for i := 1; i <= 2000; i++ {
		fmt.Fprintf(&wide, "%04d %s\n", i, strings.Repeat("w", 195))
	}
	dir := writeTree(t, map[string]string{
		"a.txt":     "one\ntwo\nthree\n",
		"noeol.txt": "one\ntwo",
		"crlf.txt":  "one\r\ntwo\r\n",
		"many.txt":  many.String(),
		"wide.txt":  wide.String(),
		"long.txt":  strings.Repeat("x", 1990) + strings.Repeat("é", 10) + "tail\nshort\n",
		"empty.txt": "",
		"bin.dat":   "abc\x00def",
		"sub/b.txt": "bee\n",
	})
	line := func(i int) string { return fmt.Sprintf("line %d", i) }
	tests := []struct {
		name, args, want string
	}{
		{"whole", `{"path":"a.txt"}`, "     1\tone\n     2\ttwo\n     3\tthree"},
		{"no final newline", `{"path":"noeol.txt"}`, "     1\tone\n     2\ttwo"},
		{"crlf", `{"path":"crlf.txt"}`, "     1\tone\n     2\ttwo"},
		{"offset", `{"path":"a.txt","offset":2}`, "     2\ttwo\n     3\tthree"},
		{"offset and limit", `{"path":"a.txt","offset":2,"limit":1}`, "     2\ttwo\n... more lines follow; continue with offset=3"},
		{"limit reaches the end", `{"path":"a.txt","limit":3}`, "     1\tone\n     2\ttwo\n     3\tthree"},
		{"absolute", fmt.Sprintf(`{"path":%q}`, filepath.Join(dir, "sub", "b.txt")), "     1\tbee"},
		{"default limit", `{"path":"many.txt"}`, numbered(1, 2000, line) + "\n... more lines follow; continue with offset=2001"},
		{"rest", `{"path":"many.txt","offset":2001}`, numbered(2001, 2500, line)},
		{"byte cap", `{"path":"wide.txt"}`, numbered(1, 1260, func(i int) string {
			return fmt.Sprintf("%04d %s", i, strings.Repeat("w", 195))
		}) + "\n... output truncated at 256 KiB; continue with offset=1261"},
		{"long line cut at a rune boundary", `{"path":"long.txt"}`,
			"     1\t" + strings.Repeat("x", 1990) + strings.Repeat("é", 5) + " [... 14 more bytes]\n     2\tshort"},
		{"empty", `{"path":"empty.txt"}`, "(empty file)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, mustCall(t, tools.Read(), dir, tt.args))
		})
	}
}

func TestReadErrors(t *testing.T) {
	dir := writeTree(t, map[string]string{"a.txt": "one\n", "bin.dat": "abc\x00def", "sub/b.txt": "b\n"})
	if runtime.GOOS != "windows" {
		outside := filepath.Join(t.TempDir(), "passwd")
		require.NoError(t, os.WriteFile(outside, []byte("root:secret\n"), 0o644))
		require.NoError(t, os.Symlink(outside, filepath.Join(dir, "passwd")))
		mkfifo(t, filepath.Join(dir, "pipe"))
	}
	tests := []struct{ args, want string }{
		{`{"path":"bin.dat"}`, "bin.dat is a binary file (7 bytes); read shows text files only"},
		{`{"path":"a.txt","offset":5}`, "offset 5 is past the end of a.txt, which has 1 lines"},
		{`{"path":"a.txt","offset":-1}`, "must be positive"},
		{`{"path":"a.txt","limit":-1}`, "must be positive"},
		{`{"path":"sub"}`, "sub is a directory"},
		{`{"path":"nope.txt"}`, "nope.txt: file does not exist; use ls or glob"},
		{`{"path":"../a.txt"}`, "outside the root"},
		{`{"path":"/etc/passwd"}`, "outside the root"},
		{`{"path":"passwd"}`, "outside the root"},
		{`{"path":"pipe"}`, "pipe is a named pipe"},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			if runtime.GOOS == "windows" && (strings.Contains(tt.args, `"passwd"`) || strings.Contains(tt.args, `"pipe"`)) {
				t.Skip("needs symlinks and FIFOs")
			}
			done := make(chan error, 1)
			go func() {
				_, err := call(t, tools.Read(), dir, tt.args)
				done <- err
			}()
			select {
			case err := <-done:
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.want)
				assert.NotContains(t, err.Error(), "secret")
			case <-time.After(5 * time.Second):
				t.Fatal("read blocked")
			}
		})
	}
}
