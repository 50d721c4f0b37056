package tools_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/tools"
)

func childChanges(files ...string) *agenttypes.Changes {
	return &agenttypes.Changes{
		Repo: "/repo/.git", Branch: "troupe/run-1/a-2", Base: "b1", Head: "h2",
		Modified: files, Insertions: 7, Deletions: 2,
	}
}

func TestMerge(t *testing.T) {
	fixer := childChanges("cart/cart.go", "cart/cart_test.go")
	tree := &fakeTree{changes: map[string]*agenttypes.Changes{
		"fixer": fixer, "a-2": fixer,
		"idle":    nil,
		"emptied": {Branch: "troupe/run-1/a-3", Base: "b1", Head: "b1"},
	}}
	tests := []struct {
		name, args string
		res        agenttypes.MergeResult
		want       string
		merged     bool
	}{
		{"clean, by label", `{"agent":"fixer"}`, agenttypes.MergeResult{Files: []string{"cart/cart.go", "cart/cart_test.go"}},
			"merged the changes of agent fixer (branch troupe/run-1/a-2, +7 -2 lines) into your workspace: 2 files\ncart/cart.go\ncart/cart_test.go", true},
		{"clean, by ID", `{"agent":" a-2 "}`, agenttypes.MergeResult{Files: []string{"cart/cart.go"}},
			"merged the changes of agent a-2 (branch troupe/run-1/a-2, +7 -2 lines) into your workspace: 1 file\ncart/cart.go", true},
		{"already there", `{"agent":"fixer"}`, agenttypes.MergeResult{},
			"merged the changes of agent fixer (branch troupe/run-1/a-2, +7 -2 lines) into your workspace: 0 files; your workspace already held them", true},
		{"no workspace of its own", `{"agent":"idle"}`, agenttypes.MergeResult{}, "agent idle changed no files; there is nothing to merge", false},
		{"no changes", `{"agent":"emptied"}`, agenttypes.MergeResult{}, "agent emptied changed no files; there is nothing to merge", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := &fakeWorkspace{dir: t.TempDir(), mergeRes: tt.res}
			out, err := callWS(context.Background(), tools.Merge(), ws, tree, tt.args)
			require.NoError(t, err)
			assert.Equal(t, tt.want, out)
			if tt.merged {
				assert.Equal(t, []*agenttypes.Changes{fixer}, ws.merged)
			} else {
				assert.Empty(t, ws.merged)
			}
		})
	}
}

func TestMergeConflicts(t *testing.T) {
	tree := &fakeTree{changes: map[string]*agenttypes.Changes{"fixer": childChanges("cart/cart.go", "README.md")}}
	ws := &fakeWorkspace{dir: t.TempDir(), mergeRes: agenttypes.MergeResult{Conflicts: []agenttypes.Conflict{
		{Path: "cart/cart.go", Reason: "content", Hunks: "<<<<<<< ours\n\tsum := 0\n=======\n\ttotal := 0\n>>>>>>> theirs\n"},
		{Path: "README.md", Reason: "modify/delete"},
	}}}
	_, err := callWS(context.Background(), tools.Merge(), ws, tree, `{"agent":"fixer"}`)
	require.Error(t, err)
	assert.Equal(t, "merge: the changes of agent fixer conflict with your workspace in 2 files, so nothing was merged and your workspace is unchanged.\n"+
		"To bring the changes in, make them yourself with edit, using the regions below (between <<<<<<< and ======= is your side, between ======= and >>>>>>> the subagent's), or delegate the task again so that it is done on top of your current files, and merge that. The subagent's whole change is on branch troupe/run-1/a-2.\n"+
		"\nconflict in cart/cart.go (content):\n<<<<<<< ours\n\tsum := 0\n=======\n\ttotal := 0\n>>>>>>> theirs\n"+
		"\nconflict in README.md (modify/delete)", err.Error())
}

// However many conflicts and however long their hunks, the error stays
// bounded, and says what it left out.
func TestMergeConflictsBounded(t *testing.T) {
	hunk := strings.Repeat("<<<<<<< ours\n"+strings.Repeat("x", 100)+"\n=======\ny\n>>>>>>> theirs\n", 100)
	var conflicts []agenttypes.Conflict
	for i := range 300 {
		conflicts = append(conflicts, agenttypes.Conflict{Path: fmt.Sprintf("f%03d.go", i), Reason: "content", Hunks: hunk})
	}
	tree := &fakeTree{changes: map[string]*agenttypes.Changes{"fixer": childChanges("f.go")}}
	ws := &fakeWorkspace{dir: t.TempDir(), mergeRes: agenttypes.MergeResult{Conflicts: conflicts}}
	_, err := callWS(context.Background(), tools.Merge(), ws, tree, `{"agent":"fixer"}`)
	require.Error(t, err)
	msg := err.Error()
	assert.Less(t, len(msg), 32<<10)
	assert.Contains(t, msg, "in 300 files")
	assert.Contains(t, msg, "more of this file's conflicting regions not shown]")
	assert.Contains(t, msg, "conflict in f099.go (content): its regions are not shown, for room")
	assert.Contains(t, msg, "\n... 200 more conflicting files")
	assert.NotContains(t, msg, "f100.go")
}

func TestMergeErrors(t *testing.T) {
	unknown := errors.New(`not found: no child of agent agent-1 is labelled or identified "nobody"`)
	running := errors.New(`delegation refused: child "slow" is still running; wait for it (collect with wait) before merging its changes`)
	tests := []struct {
		name, args string
		tree       agenttypes.Tree
		mergeErr   error
		want       string
	}{
		{"unknown child", `{"agent":"nobody"}`, &fakeTree{changesErr: unknown}, nil, `merge: not found: no child of agent agent-1 is labelled or identified "nobody"`},
		{"still running", `{"agent":"slow"}`, &fakeTree{changesErr: running}, nil, "merge: delegation refused: child \"slow\" is still running; wait for it (collect with wait) before merging its changes"},
		{"merge failed", `{"agent":"fixer"}`, &fakeTree{changes: map[string]*agenttypes.Changes{"fixer": childChanges("a.go")}},
			fmt.Errorf("%w: git merge-tree: exit status 128", agenttypes.ErrWorkspace), "merge: workspace: git merge-tree: exit status 128"},
		{"no agent", `{"agent":" "}`, &fakeTree{}, nil, `merge: missing "agent": give the label or ID of a subagent of yours that has ended`},
		{"unknown field", `{"agent":"x","branch":"main"}`, &fakeTree{}, nil, `merge: unknown argument "branch"; valid arguments are agent`},
		{"no manager", `{"agent":"x"}`, nil, nil, "merge: works only inside an agent run by a manager"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := &fakeWorkspace{dir: t.TempDir(), mergeErr: tt.mergeErr}
			_, err := callWS(context.Background(), tools.Merge(), ws, tt.tree, tt.args)
			require.Error(t, err)
			assert.Equal(t, tt.want, err.Error())
			if tt.mergeErr != nil {
				assert.ErrorIs(t, err, agenttypes.ErrWorkspace)
			}
		})
	}
}
