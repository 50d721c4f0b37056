package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/tools"
)

// runningGroup is a background group of three: one ended, one failed, one
// still running.
func runningGroup() *agenttypes.CollectResponse {
	rs := sampleResults()
	return &agenttypes.CollectResponse{Group: "g-2", Results: []agenttypes.ChildResult{
		rs[0],
		rs[2],
		{Label: "perf", ID: "ag-7f3a5", Type: "explore", Model: "openai:gpt-4o-mini", Status: agenttypes.ChildRunning,
			Usage: agenttypes.Usage{InputTokens: 3_400, OutputTokens: 120}, ToolCalls: 2, Turns: 1, Duration: 5 * time.Second},
	}}
}

func TestCollectRunningGroup(t *testing.T) {
	tree := &fakeTree{collectResp: runningGroup()}
	out, err := callTree(context.Background(), tools.Collect(), tree, "", `{"group":"g-2"}`)
	require.NoError(t, err)
	golden(t, "collect-running.md.golden", out)
	assert.True(t, strings.HasPrefix(out, "# Group g-2 still running — Subagents complete: 1/3 (1 failed, 1 running)\nStill running: [perf] ag-7f3a5."), out)
	assert.Contains(t, out, "## [perf] running — explore")
	assert.Contains(t, out, "Agent ID: ag-7f3a5\n\n(still running)")
	assert.Equal(t, []agenttypes.CollectRequest{{Group: "g-2"}}, tree.collected, "wait defaults to 0: answer at once")
	assert.Empty(t, tree.cancelled)

	out, err = callTree(context.Background(), tools.Collect(), tree, "", `{"group":"g-2","return":"json"}`)
	require.NoError(t, err)
	golden(t, "collect-running.json.golden", out)
	var got struct {
		Group                                                 string
		Done                                                  bool
		Completed, Partial, Failed, Cancelled, Running, Total int
		Results                                               []struct{ Label, Status string }
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Equal(t, "g-2", got.Group)
	assert.False(t, got.Done)
	assert.Equal(t, [6]int{1, 0, 1, 0, 1, 3}, [6]int{got.Completed, got.Partial, got.Failed, got.Cancelled, got.Running, got.Total})
	require.Len(t, got.Results, 3)
	assert.Equal(t, "running", got.Results[2].Status)
}

func TestCollectDoneGroup(t *testing.T) {
	resp := &agenttypes.CollectResponse{Group: "g-3", Done: true, Results: sampleResults()[:2]}
	tree := &fakeTree{collectResp: resp}
	out, err := callTree(context.Background(), tools.Collect(), tree, "", `{"group":" g-3 ","wait":2.5}`)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(out, "# Group g-3 done — Subagents complete: 1/2 (1 partial)\n\n## [security] ok"), out)
	assert.NotContains(t, out, "Still running")
	assert.Equal(t, []agenttypes.CollectRequest{{Group: "g-3", Wait: 2500 * time.Millisecond}}, tree.collected, "wait is seconds, fractions too; the group ID is trimmed")

	out, err = callTree(context.Background(), tools.Collect(), tree, "", `{"group":"g-3","return":"json"}`)
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Equal(t, true, got["done"])
	assert.Equal(t, 0.0, got["running"], "collect's JSON always says how many still run")
}

func TestCollectCancel(t *testing.T) {
	tests := []struct {
		args string
		wait time.Duration
	}{
		{`{"group":"g-2","cancel":true}`, 10 * time.Second},
		{`{"group":"g-2","cancel":true,"wait":0}`, 0},
		{`{"group":"g-2","cancel":true,"wait":30}`, 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			resp := runningGroup()
			resp.Results[2].Status, resp.Results[2].Reason = agenttypes.ChildCancelled, "cancelled"
			resp.Done = true
			tree := &fakeTree{collectResp: resp}
			out, err := callTree(context.Background(), tools.Collect(), tree, "", tt.args)
			require.NoError(t, err)
			assert.Equal(t, []string{"g-2"}, tree.cancelled)
			assert.Equal(t, []agenttypes.CollectRequest{{Group: "g-2", Wait: tt.wait}}, tree.collected,
				"after cancelling, collect waits for the children to end: by default a short while, else as told")
			assert.True(t, strings.HasPrefix(out, "# Group g-2 done — Subagents complete: 1/3 (1 failed, 1 cancelled)\nYou cancelled the children that were still running.\n"), out)
		})
	}
}

func TestCollectErrors(t *testing.T) {
	unknown := fmt.Errorf("%w g-9 of agent a-0", agenttypes.ErrUnknownGroup)
	tests := []struct {
		name, args string
		tree       *fakeTree
		want       string
	}{
		{"no group", `{}`, &fakeTree{}, `collect: missing "group": give the group ID a delegate call with mode background returned`},
		{"blank group", `{"group":"  "}`, &fakeTree{}, `collect: missing "group": give the group ID a delegate call with mode background returned`},
		{"wait too long", `{"group":"g","wait":601}`, &fakeTree{}, "collect: wait is 601; give 0 to 600 seconds"},
		{"wait negative", `{"group":"g","wait":-1}`, &fakeTree{}, "collect: wait is -1; give 0 to 600 seconds"},
		{"wait as a string", `{"group":"g","wait":"10s"}`, &fakeTree{}, `collect: argument "wait" must be a number, not a JSON string`},
		{"bad return", `{"group":"g","return":"text"}`, &fakeTree{}, `collect: return is "text"; use "markdown" (the default) or "json"`},
		{"unknown field", `{"group":"g","timeout":5}`, &fakeTree{}, `collect: unknown argument "timeout"; valid arguments are group, wait, cancel, return`},
		{"unknown group", `{"group":"g-9"}`, &fakeTree{collectErr: unknown},
			"collect: unknown group g-9 of agent a-0; give a group ID that one of your delegate calls with mode background returned"},
		{"unknown group to cancel", `{"group":"g-9","cancel":true}`, &fakeTree{cancelErr: unknown},
			"collect: unknown group g-9 of agent a-0; give a group ID that one of your delegate calls with mode background returned"},
		{"other tree error", `{"group":"g"}`, &fakeTree{collectErr: fmt.Errorf("manager closed")}, "collect: manager closed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := callTree(context.Background(), tools.Collect(), tt.tree, "", tt.args)
			require.Error(t, err)
			assert.Equal(t, tt.want, err.Error())
			if tt.tree.collectErr == nil && tt.tree.cancelErr == nil {
				assert.Empty(t, tt.tree.collected, "bad arguments reach no group")
				assert.Empty(t, tt.tree.cancelled, "bad arguments reach no group")
			}
		})
	}
}
