package tools_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/builtin/tools"
)

func TestWrite(t *testing.T) {
	dir := writeTree(t, map[string]string{"a.txt": "alpha\n", "sub/b.txt": "bee\n"})
	ws := &fakeWorkspace{dir: dir}
	tests := []struct {
		name, args, want, path, content string
	}{
		{"new file", `{"path":"new.txt","content":"one\ntwo\n"}`, "created new.txt (2 lines, 8 bytes)", "new.txt", "one\ntwo\n"},
		{"new directories", `{"path":"x/y/z.go","content":"package y"}`, "created x/y/z.go (1 line, 9 bytes)", "x/y/z.go", "package y"},
		{"replace", `{"path":"a.txt","content":"omega\n"}`, "replaced a.txt (1 line, 6 bytes)", "a.txt", "omega\n"},
		{"same content", `{"path":"sub/b.txt","content":"bee\n"}`, "sub/b.txt already holds this content; nothing changed", "sub/b.txt", "bee\n"},
		{"empty", `{"path":"empty.txt","content":""}`, "created empty.txt (0 lines, 0 bytes)", "empty.txt", ""},
		{"absolute inside", fmt.Sprintf(`{"path":%s,"content":"abs\n"}`, jsonString(filepath.Join(dir, "sub", "abs.txt"))), "created sub/abs.txt (1 line, 4 bytes)", "sub/abs.txt", "abs\n"},
		{"slashes cleaned", `{"path":"./sub//c.txt","content":"c"}`, "created sub/c.txt (1 line, 1 byte)", "sub/c.txt", "c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := callWS(context.Background(), tools.Write(), ws, nil, tt.args)
			require.NoError(t, err)
			assert.Equal(t, tt.want, out)
			got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(tt.path)))
			require.NoError(t, err)
			assert.Equal(t, tt.content, string(got))
		})
	}
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		assert.NotContains(t, e.Name(), ".tmp-", "no temporary file is left behind")
	}
}

func TestWriteErrors(t *testing.T) {
	dir := writeTree(t, map[string]string{"a.txt": "alpha\n"})
	ws := &fakeWorkspace{dir: dir}
	tests := []struct{ name, args, want string }{
		{"no path", `{"content":"x"}`, `write: missing "path"`},
		{"no content", `{"path":"b.txt"}`, `write: missing "content": give the file's complete new content ("" for an empty file)`},
		{"unknown field", `{"path":"b.txt","content":"x","mode":"0755"}`, `write: unknown argument "mode"; valid arguments are path, content`},
		{"content not a string", `{"path":"b.txt","content":3}`, `write: argument "content" must be a string, not a JSON number`},
		{"too big", fmt.Sprintf(`{"path":"b.txt","content":%q}`, strings.Repeat("x", 4<<20+1)), "write: content is 4096 KiB; write takes at most 4 MiB per file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := snapshot(t, dir)
			_, err := callWS(context.Background(), tools.Write(), ws, nil, tt.args)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Equal(t, before, snapshot(t, dir))
		})
	}
}

// Replacing a file keeps its permissions: a script stays executable, a
// private file private.
func TestWriteKeepsMode(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix permissions")
	}
	dir := writeTree(t, map[string]string{"run.sh": "#!/bin/sh\n", "private.txt": "p\n"})
	require.NoError(t, os.Chmod(filepath.Join(dir, "run.sh"), 0o755))
	require.NoError(t, os.Chmod(filepath.Join(dir, "private.txt"), 0o600))
	ws := &fakeWorkspace{dir: dir}
	for name, mode := range map[string]fs.FileMode{"run.sh": 0o755, "private.txt": 0o600} {
		_, err := callWS(context.Background(), tools.Write(), ws, nil, fmt.Sprintf(`{"path":%q,"content":"changed\n"}`, name))
		require.NoError(t, err)
		fi, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.Equal(t, mode, fi.Mode().Perm(), name)
	}
	_, err := callWS(context.Background(), tools.Write(), ws, nil, `{"path":"fresh.txt","content":"f"}`)
	require.NoError(t, err)
	fi, err := os.Stat(filepath.Join(dir, "fresh.txt"))
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o644), fi.Mode().Perm())
}

// The file is replaced by a rename, never rewritten in place: a hard link
// to it from outside the workspace keeps the old content.
func TestWriteReplacesAtomically(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs hard links")
	}
	base := t.TempDir()
	dir := filepath.Join(base, "ws")
	require.NoError(t, os.Mkdir(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("old\n"), 0o644))
	outside := filepath.Join(base, "linked.txt")
	require.NoError(t, os.Link(filepath.Join(dir, "a.txt"), outside))
	ws := &fakeWorkspace{dir: dir}
	for _, args := range []string{`{"path":"a.txt","content":"new\n"}`, `{"path":"a.txt","old_string":"new","new_string":"newer"}`} {
		tool := tools.Write()
		if strings.Contains(args, "old_string") {
			tool = tools.Edit()
		}
		_, err := callWS(context.Background(), tool, ws, nil, args)
		require.NoError(t, err)
		got, err := os.ReadFile(outside)
		require.NoError(t, err)
		assert.Equal(t, "old\n", string(got), tool.Spec().Name)
	}
	got, err := os.ReadFile(filepath.Join(dir, "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "newer\n", string(got))
}

// Writes and edits of one file made at once all land: none is lost to
// another's read-modify-write.
func TestConcurrentEditsOfOneFile(t *testing.T) {
	var lines []string
	for i := range 20 {
		lines = append(lines, fmt.Sprintf("line %02d", i))
	}
	dir := writeTree(t, map[string]string{"a.txt": strings.Join(lines, "\n") + "\n"})
	ws := &fakeWorkspace{dir: dir}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			args := fmt.Sprintf(`{"path":"a.txt","old_string":"line %02d\n","new_string":"edited %02d\n"}`, i, i)
			_, err := callWS(context.Background(), tools.Edit(), ws, nil, args)
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	got, err := os.ReadFile(filepath.Join(dir, "a.txt"))
	require.NoError(t, err)
	for i := range 20 {
		assert.Contains(t, string(got), fmt.Sprintf("edited %02d\n", i))
	}
}
