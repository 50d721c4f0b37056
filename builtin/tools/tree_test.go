package tools_test

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// fakeTree is an agenttypes.Tree that records what the tools asked of it
// and answers what the test set.
type fakeTree struct {
	mu sync.Mutex

	delegated    []agenttypes.DelegateRequest
	delegateResp *agenttypes.DelegateResponse
	delegateErr  error

	collected   []agenttypes.CollectRequest
	collectResp *agenttypes.CollectResponse
	collectErr  error

	cancelled []string
	cancelErr error

	asked  []agenttypes.Question
	answer agenttypes.Answer
	askErr error

	// changes answer ChildChanges by child label or ID.
	changes    map[string]*agenttypes.Changes
	changesErr error
}

var _ agenttypes.Tree = (*fakeTree)(nil)

func (f *fakeTree) Delegate(_ context.Context, req agenttypes.DelegateRequest) (*agenttypes.DelegateResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.delegated = append(f.delegated, req)
	if f.delegateErr != nil {
		return nil, f.delegateErr
	}
	if f.delegateResp != nil {
		return f.delegateResp, nil
	}
	// By default every task completes with a one-line report.
	resp := &agenttypes.DelegateResponse{Group: "g-1"}
	for i, t := range req.Tasks {
		id := "a-" + string(rune('1'+i))
		resp.Children = append(resp.Children, agenttypes.ChildRef{Label: t.Label, ID: id})
		if !req.Background {
			resp.Results = append(resp.Results, agenttypes.ChildResult{Label: t.Label, ID: id, Type: t.Type, Model: "m", Status: agenttypes.ChildOK, Reason: "done", Report: "report of " + t.Label})
		}
	}
	return resp, nil
}

func (f *fakeTree) Collect(_ context.Context, req agenttypes.CollectRequest) (*agenttypes.CollectResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.collected = append(f.collected, req)
	return f.collectResp, f.collectErr
}

func (f *fakeTree) CancelGroup(_ context.Context, group string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancelled = append(f.cancelled, group)
	return f.cancelErr
}

func (f *fakeTree) AskParent(_ context.Context, q agenttypes.Question) (agenttypes.Answer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, q)
	return f.answer, f.askErr
}

func (f *fakeTree) ChildChanges(_ context.Context, child string) (*agenttypes.Changes, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.changesErr != nil {
		return nil, f.changesErr
	}
	return f.changes[child], nil
}

// callTree calls tool as an agent working in dir whose manager offers
// tree.
func callTree(ctx context.Context, tool agenttypes.Tool, tree agenttypes.Tree, dir, args string) (string, error) {
	ctx = agenttypes.WithEnv(ctx, &agenttypes.Env{Dir: dir, Tree: tree, Note: func(string) {}})
	return tool.Call(ctx, json.RawMessage(args))
}

// golden compares got with testdata/name, or rewrites the file with
// -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./builtin/tools -run %s -update", t.Name())
	require.Equal(t, string(want), got, "output differs from %s; if the change is meant, rerun with -update and read the file", path)
}
