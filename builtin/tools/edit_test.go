package tools_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/builtin/tools"
)

const goFile = `package cart

import "errors"

// Total sums the prices of the items.
func Total(items []Item) (int, error) {
	sum := 0
	for _, it := range items {
		if it.Price < 0 {
			return 0, errors.New("negative price")
		}
		sum += it.Price
	}
	return sum, nil
}
`

func TestEdit(t *testing.T) {
	tests := []struct {
		name, file, args, want, content string
	}{
		{
			"one occurrence", goFile,
			`{"path":"cart.go","old_string":"\tsum := 0\n","new_string":"\tsum := 0 // cents\n\tcount := 0\n"}`,
			"replaced 1 occurrence in cart.go (lines 7-8):\n" +
				"     5\t// Total sums the prices of the items.\n" +
				"     6\tfunc Total(items []Item) (int, error) {\n" +
				"     7\t\tsum := 0 // cents\n" +
				"     8\t\tcount := 0\n" +
				"     9\t\tfor _, it := range items {\n" +
				"    10\t\t\tif it.Price < 0 {",
			strings.Replace(goFile, "\tsum := 0\n", "\tsum := 0 // cents\n\tcount := 0\n", 1),
		},
		{
			"within a line, at the top", "a b c\nd\n",
			`{"path":"cart.go","old_string":"a b","new_string":"A B"}`,
			"replaced 1 occurrence in cart.go (line 1):\n     1\tA B c\n     2\td",
			"A B c\nd\n",
		},
		{
			"replace all", "x := 1\ny := x\nz := x + x\n",
			`{"path":"cart.go","old_string":"x","new_string":"count","replace_all":true}`,
			"replaced 4 occurrences in cart.go (lines 1, 2 and 3)",
			"count := 1\ny := count\nz := count + count\n",
		},
		{
			"replace all, multi-line", "a\nb\na\nb\n",
			`{"path":"cart.go","old_string":"a\nb","new_string":"c\nd\ne","replace_all":true}`,
			"replaced 2 occurrences in cart.go (lines 1-3 and 4-6)",
			"c\nd\ne\nc\nd\ne\n",
		},
		{
			"delete", "keep\ndrop me\nkeep too\n",
			`{"path":"cart.go","old_string":"drop me\n","new_string":""}`,
			"removed 1 occurrence from cart.go (line 2):\n     1\tkeep\n     2\tkeep too",
			"keep\nkeep too\n",
		},
		{
			"CRLF file, LF old_string", "one\r\ntwo\r\nthree\r\n",
			`{"path":"cart.go","old_string":"one\ntwo\n","new_string":"1\n2\n"}`,
			"replaced 1 occurrence in cart.go (lines 1-2):\n     1\t1\n     2\t2\n     3\tthree",
			"1\r\n2\r\nthree\r\n",
		},
		{
			"unicode", "naïve café\n",
			`{"path":"cart.go","old_string":"café","new_string":"caffè"}`,
			"replaced 1 occurrence in cart.go (line 1):\n     1\tnaïve caffè",
			"naïve caffè\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeTree(t, map[string]string{"cart.go": tt.file})
			out, err := callWS(context.Background(), tools.Edit(), &fakeWorkspace{dir: dir}, nil, tt.args)
			require.NoError(t, err)
			assert.Equal(t, tt.want, out)
			got, err := os.ReadFile(filepath.Join(dir, "cart.go"))
			require.NoError(t, err)
			assert.Equal(t, tt.content, string(got))
		})
	}
}

func TestEditKeepsMode(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix permissions")
	}
	dir := writeTree(t, map[string]string{"run.sh": "#!/bin/sh\necho hi\n"})
	require.NoError(t, os.Chmod(filepath.Join(dir, "run.sh"), 0o750))
	_, err := callWS(context.Background(), tools.Edit(), &fakeWorkspace{dir: dir}, nil, `{"path":"run.sh","old_string":"hi","new_string":"hello"}`)
	require.NoError(t, err)
	fi, err := os.Stat(filepath.Join(dir, "run.sh"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o750), fi.Mode().Perm())
}

// Every refusal leaves the file as it was and says what to do instead.
func TestEditErrors(t *testing.T) {
	many := strings.Repeat("return nil\n", 12)
	files := map[string]string{
		"cart.go":    goFile,
		"dup.go":     "x := 1\nfoo()\ny := 2\nfoo()\nfoo()\n",
		"many.go":    many,
		"bin.dat":    "abc\x00def",
		"latin1.txt": "caf\xe9\n",
	}
	tests := []struct{ name, args, want string }{
		{"absent, whitespace differs",
			`{"path":"cart.go","old_string":"if it.Price < 0 {\n    return 0, errors.New(\"negative price\")\n}","new_string":"x"}`,
			"edit: old_string is not in cart.go exactly, but lines 9-11 hold it with different whitespace (indentation, spaces or line endings); copy the text exactly as shown here, without the line numbers:\n" +
				"     9\t\t\tif it.Price < 0 {\n" +
				"    10\t\t\t\treturn 0, errors.New(\"negative price\")\n" +
				"    11\t\t\t}"},
		{"absent, close",
			`{"path":"cart.go","old_string":"\tfor _, item := range items {\n\t\tif item.Price <= 0 {","new_string":"x"}`,
			"edit: old_string is not in cart.go. The closest lines are lines 8-9, shown below with a line around them; read them and copy the text exactly, whitespace included, without the line numbers:\n" +
				"     7\t\tsum := 0\n" +
				"     8\t\tfor _, it := range items {\n" +
				"     9\t\t\tif it.Price < 0 {\n" +
				"    10\t\t\t\treturn 0, errors.New(\"negative price\")"},
		{"absent, first line changed",
			`{"path":"cart.go","old_string":"// Total adds up the prices.\nfunc Total(items []Item) (int, error) {","new_string":"x"}`,
			"The closest lines are lines 5-6"},
		{"absent, nothing alike", `{"path":"cart.go","old_string":"SELECT * FROM users WHERE id = $1","new_string":"x"}`,
			"edit: old_string is not in cart.go, and no lines there look like it; read the file to see what it holds now"},
		{"absent, only whitespace", `{"path":"cart.go","old_string":"\n\n\n\n","new_string":"x"}`,
			"old_string (only whitespace) is not in cart.go"},
		{"several", `{"path":"dup.go","old_string":"foo()","new_string":"bar()"}`,
			"edit: old_string occurs 3 times in dup.go (at lines 2, 4 and 5); include more of the surrounding lines in old_string so that it matches once, or set replace_all to true to replace all 3"},
		{"many", `{"path":"many.go","old_string":"return nil","new_string":"return err"}`,
			"occurs 12 times in many.go (at lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 2 more)"},
		{"binary", `{"path":"bin.dat","old_string":"abc","new_string":"xyz"}`,
			"edit: bin.dat is a binary file (7 bytes); edit changes text files only, and write replaces a file whole"},
		{"not UTF-8", `{"path":"latin1.txt","old_string":"caf","new_string":"kaf"}`,
			"edit: latin1.txt is not UTF-8 text"},
		{"too big", `{"path":"big.txt","old_string":"a","new_string":"b"}`,
			"edit: big.txt is 4096 KiB; edit changes files of at most 4 MiB"},
		{"grows too big", `{"path":"many.go","old_string":"return nil","new_string":"` + strings.Repeat("z", 400<<10) + `","replace_all":true}`,
			"many.go would be 4800 KiB after the edit; a file may hold at most 4 MiB"},
		{"same strings", `{"path":"cart.go","old_string":"sum","new_string":"sum"}`,
			"edit: old_string and new_string are the same, so nothing would change"},
		{"empty old_string", `{"path":"cart.go","old_string":"","new_string":"x"}`,
			"edit: old_string is empty; give the exact text to replace, or use write to create a file or replace all of it"},
		{"no old_string", `{"path":"cart.go","new_string":"x"}`, `edit: missing "old_string"`},
		{"no new_string", `{"path":"cart.go","old_string":"x"}`, `edit: missing "new_string"`},
		{"no path", `{"old_string":"x","new_string":"y"}`, `edit: missing "path"`},
		{"missing file", `{"path":"nope.go","old_string":"x","new_string":"y"}`,
			"edit: nope.go: file does not exist; check the path with ls or glob, or use write to create the file"},
		{"unknown field", `{"path":"cart.go","old_string":"x","new_string":"y","count":2}`,
			`edit: unknown argument "count"; valid arguments are path, old_string, new_string, replace_all`},
		{"replace_all not a boolean", `{"path":"cart.go","old_string":"x","new_string":"y","replace_all":"yes"}`,
			`edit: argument "replace_all" must be a boolean, not a JSON string`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeTree(t, files)
			if tt.name == "too big" {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "big.txt"), []byte(strings.Repeat("a", 4<<20+1)), 0o644))
			}
			before := snapshot(t, dir)
			_, err := callWS(context.Background(), tools.Edit(), &fakeWorkspace{dir: dir}, nil, tt.args)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Equal(t, before, snapshot(t, dir))
		})
	}
}

// The closest lines of a long old_string are shown bounded, and the
// search stays quick on a large file.
func TestEditClosestLinesBounded(t *testing.T) {
	var file, old strings.Builder
	for i := range 20_000 {
		fmt.Fprintf(&file, "\tvalue%05d := compute(%d, %q)\n", i, i, "some text")
	}
	for i := 10_000; i < 10_100; i++ {
		fmt.Fprintf(&old, "\tvalue%05d := compute(%d, %q)\n", i, i, "other text")
	}
	dir := writeTree(t, map[string]string{"big.go": file.String()})
	_, err := callWS(context.Background(), tools.Edit(), &fakeWorkspace{dir: dir}, nil,
		fmt.Sprintf(`{"path":"big.go","old_string":%s,"new_string":"x"}`, jsonString(old.String())))
	require.Error(t, err)
	msg := err.Error()
	assert.Contains(t, msg, "The closest lines are lines 10001-10100")
	assert.Contains(t, msg, "10000\t\tvalue09999 := compute(9999")
	assert.Contains(t, msg, "... 72 more lines; read the file from offset=10030 for them")
	assert.LessOrEqual(t, strings.Count(msg, "\n"), 32)
}

// BenchmarkEditNotFound measures the search for the closest lines of an
// old_string absent from a file near edit's 4 MiB limit.
func BenchmarkEditNotFound(b *testing.B) {
	var file, old strings.Builder
	for i := range 80_000 {
		fmt.Fprintf(&file, "\tvalue%05d := compute(%d, %q)\n", i, i, "some text")
	}
	for i := 40_000; i < 40_020; i++ {
		fmt.Fprintf(&old, "\tvalue%05d := compute(%d, %q)\n", i, i, "other text")
	}
	dir := b.TempDir()
	require.NoError(b, os.WriteFile(filepath.Join(dir, "big.go"), []byte(file.String()), 0o644))
	args := fmt.Sprintf(`{"path":"big.go","old_string":%s,"new_string":"x"}`, jsonString(old.String()))
	ws := &fakeWorkspace{dir: dir}
	b.SetBytes(int64(file.Len()))
	for b.Loop() {
		if _, err := callWS(context.Background(), tools.Edit(), ws, nil, args); err == nil {
			b.Fatal("the edit succeeded")
		}
	}
}
