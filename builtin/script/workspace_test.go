package script

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
)

// subdirWorkspace is an agent's workspace seen by a script: its top, and
// the directory below it the agent works in.
type subdirWorkspace struct {
	agenttypes.Workspace
	top, dir string
}

func (w subdirWorkspace) Top() string { return w.top }
func (w subdirWorkspace) Dir() string { return w.dir }

const readHooks = `package hooks

import "troupe"

func Prompt(task troupe.Task) (string, error) {
	return troupe.ReadFile(task.Prompt)
}
`

// A script reads under the agent's directory in its workspace, reached
// from the workspace's top: when a command has swapped that directory
// for a symlink to outside, ReadFile refuses rather than follow it, in
// the script host's process as in the host's.
func TestScriptsReadNothingThroughASwappedAgentDirectory(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks need privileges on Windows")
	}
	top, outside := t.TempDir(), t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(top, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(top, "sub", "mine.txt"), []byte("mine"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret"), 0o644))
	ws := subdirWorkspace{top: top, dir: filepath.Join(top, "sub")}
	ctx := agenttypes.WithEnv(context.Background(), &agenttypes.Env{Dir: ws.Dir(), Note: func(string) {}, Workspace: ws})
	for name, opts := range map[string]Options{"child": {}, "in process": {AllInProcess: true}} {
		t.Run(name, func(t *testing.T) {
			before := New(opts)
			out, err := compileHooks(t, before, readHooks).Prompt(ctx, agenttypes.ScriptTask{Prompt: "mine.txt"})
			before.Close()
			require.NoError(t, err)
			assert.Equal(t, "mine", out)

			require.NoError(t, os.Rename(filepath.Join(top, "sub"), filepath.Join(top, "moved")))
			require.NoError(t, os.Symlink(outside, filepath.Join(top, "sub")))
			defer func() {
				require.NoError(t, os.Remove(filepath.Join(top, "sub")))
				require.NoError(t, os.Rename(filepath.Join(top, "moved"), filepath.Join(top, "sub")))
			}()
			after := New(opts) // a fresh process, which opens the root anew
			defer after.Close()
			out, err = compileHooks(t, after, readHooks).Prompt(ctx, agenttypes.ScriptTask{Prompt: "secret.txt"})
			require.Error(t, err)
			assert.NotContains(t, out, "secret")
			assert.Contains(t, err.Error(), "symlink")
		})
	}
}
