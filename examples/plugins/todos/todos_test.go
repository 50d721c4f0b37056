package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/sdk"
	"github.com/troupe-dev/troupe/sdk/sdktest"
)

// repo writes files (slash paths → content) under a new temp dir.
func repo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return dir
}

var sample = map[string]string{
	"main.go":         "package main\n\n// TODO: read the config file\nfunc main() {}\n",
	"store/store.go":  "package store\n\n// FIXME: not safe for concurrent use\n// HACK until the API settles\nvar cache = map[string]string{}\n",
	"store/notes.txt": "nothing to do here; todo in lower case is not a tag\n",
	".git/HEAD":       "TODO in a hidden directory is skipped\n",
	"bin.dat":         "TODO\x00binary",
}

func callTodos(t *testing.T, dir, args string) (string, error) {
	t.Helper()
	resp, err := todosTool().Call(context.Background(), sdk.CallRequest{Args: json.RawMessage(args), Agent: sdk.Agent{ID: "a", Dir: dir}})
	if err != nil {
		return "", err
	}
	return resp.Text, nil
}

func TestTodosToolConforms(t *testing.T) {
	dir := repo(t, sample)
	agent := sdk.Agent{ID: "a", Dir: dir}
	sdktest.TestTool(t, todosTool(),
		sdktest.Case{Args: `{}`, Agent: agent, Deterministic: true, Want: []string{"main.go:3: // TODO: read the config file"}},
		sdktest.Case{Args: `{"path":"store","max_results":1}`, Agent: agent, Deterministic: true, Want: []string{"store/store.go:3:", "1 more not shown"}},
		sdktest.Case{Args: `{"path":"../"}`, Agent: agent, WantErr: true, Want: []string{"leaves the repository"}},
		sdktest.Case{Args: `{"path":"/etc"}`, Agent: agent, WantErr: true, Want: []string{"is absolute"}},
		sdktest.Case{Args: `{"path":"missing"}`, Agent: agent, WantErr: true, Want: []string{"does not exist"}},
		sdktest.Case{Args: `{"max_results":0}`, Agent: agent, WantErr: true, Want: []string{"give 1 to 1000"}},
	)
}

func TestTodosListsTagsInOrder(t *testing.T) {
	out, err := callTodos(t, repo(t, sample), `{}`)
	require.NoError(t, err)
	assert.Equal(t, strings.Join([]string{
		"main.go:3: // TODO: read the config file",
		"store/store.go:3: // FIXME: not safe for concurrent use",
		"store/store.go:4: // HACK until the API settles",
		"... 1 TODO, 1 FIXME, 1 HACK in 4 files searched",
	}, "\n"), out, "hidden directories, binary files and lower-case words are skipped")

	out, err = callTodos(t, repo(t, map[string]string{"a.txt": "done\n"}), `null`)
	require.NoError(t, err)
	assert.Equal(t, "no TODO, FIXME, HACK or XXX comments", out)
}

func TestTodosStaysInsideTheDirectory(t *testing.T) {
	outside := repo(t, map[string]string{"secret.go": "// TODO: outside the repository\n"})
	dir := repo(t, map[string]string{"a.go": "// TODO: inside\n"})
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "out")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret.go"), filepath.Join(dir, "secret.go")))

	out, err := callTodos(t, dir, `{}`)
	require.NoError(t, err)
	assert.NotContains(t, out, "outside", "symbolic links are not followed")
	assert.Contains(t, out, "a.go:1: // TODO: inside")

	_, err = callTodos(t, dir, `{"path":"out"}`)
	require.Error(t, err, "a link out of the directory is refused")
	_, err = callTodos(t, dir, `{"path":"a/../../x"}`)
	require.ErrorIs(t, err, sdk.ErrInvalidArgument)
}

func TestTodosSkipsLargeFiles(t *testing.T) {
	big := "// TODO: in a large file\n" + strings.Repeat("x", maxFileSize)
	out, err := callTodos(t, repo(t, map[string]string{"big.go": big, "small.go": "// XXX small\n"}), `{}`)
	require.NoError(t, err)
	assert.Equal(t, "small.go:1: // XXX small\n... 1 XXX in 2 files searched", out)
}

func TestTodosHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := todosTool().Call(ctx, sdk.CallRequest{Args: json.RawMessage(`{}`), Agent: sdk.Agent{Dir: repo(t, sample)}})
	require.ErrorIs(t, err, context.Canceled)
}

func TestTodosNeedsADirectory(t *testing.T) {
	_, err := callTodos(t, "", `{}`)
	require.ErrorContains(t, err, "the agent has no directory")
}
