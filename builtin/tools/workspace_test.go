package tools_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
)

// fakeWorkspace is an agenttypes.Workspace over a plain directory that
// records the commands and merges asked of it and answers what the test
// set.
type fakeWorkspace struct {
	dir string
	top string // "" for dir

	mu        sync.Mutex
	ran       []agenttypes.Command
	result    agenttypes.CommandResult
	runErr    error
	merged    []*agenttypes.Changes
	mergeRes  agenttypes.MergeResult
	mergeErr  error
	closeHits int
}

var _ agenttypes.Workspace = (*fakeWorkspace)(nil)

func (w *fakeWorkspace) Top() string {
	if w.top != "" {
		return w.top
	}
	return w.dir
}

func (w *fakeWorkspace) Dir() string { return w.dir }

func (w *fakeWorkspace) Run(_ context.Context, cmd agenttypes.Command) (agenttypes.CommandResult, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ran = append(w.ran, cmd)
	return w.result, w.runErr
}

func (w *fakeWorkspace) Merge(_ context.Context, from *agenttypes.Changes) (agenttypes.MergeResult, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.merged = append(w.merged, from)
	return w.mergeRes, w.mergeErr
}

func (w *fakeWorkspace) Close(context.Context) (*agenttypes.Changes, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closeHits++
	return nil, nil
}

// callWS calls tool as an agent whose workspace is ws, with tree as its
// manager's tree (nil for none).
func callWS(ctx context.Context, tool agenttypes.Tool, ws agenttypes.Workspace, tree agenttypes.Tree, args string) (string, error) {
	env := &agenttypes.Env{AgentID: "agent-1", Note: func(string) {}, Workspace: ws}
	if ws != nil {
		env.Dir = ws.Dir()
	}
	if tree != nil {
		env.Tree = tree
	}
	return tool.Call(agenttypes.WithEnv(ctx, env), json.RawMessage(args))
}

// entry is what a snapshot records of one directory entry.
type entry struct {
	mode fs.FileMode
	data string // a regular file's content, a symlink's target
}

// snapshot records everything under dir, without following symlinks or
// opening anything but regular files, so that a test can show that a
// refused call changed nothing.
func snapshot(t *testing.T, dir string) map[string]entry {
	t.Helper()
	snap := map[string]entry{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		e := entry{mode: fi.Mode()}
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			e.data = string(b)
		case fi.Mode()&fs.ModeSymlink != 0:
			if e.data, err = os.Readlink(p); err != nil {
				return err
			}
		}
		snap[p] = e
		return nil
	})
	require.NoError(t, err)
	return snap
}
