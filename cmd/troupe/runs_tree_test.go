//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/manager"
)

// writeRun appends to the transcript file (one per troupe process, named
// after the manager) the events of one agent as the manager writes them: a
// spawned event, and a completed one when state is terminal.
func writeRun(t *testing.T, dir, file, id, parent, label, typ, task string, started time.Time, state manager.State) {
	t.Helper()
	depth := 0
	if parent != "" {
		depth = 1
	}
	events := []manager.Event{{Seq: 1, Time: started, Kind: manager.EventSpawned, AgentID: id, ParentID: parent, Label: label, Depth: depth, Type: typ, Text: task, State: manager.Pending}}
	if state == manager.Running {
		events = append(events, manager.Event{Seq: 2, Time: started, Kind: manager.EventState, AgentID: id, ParentID: parent, Label: label, Depth: depth, Type: typ, State: state, From: manager.Pending})
	}
	if state.Terminal() {
		reason := manager.ReasonDone
		if state != manager.Completed {
			reason = manager.ReasonBudgetTurns
		}
		events = append(events, manager.Event{Seq: 2, Time: started.Add(time.Second), Kind: manager.EventCompleted, AgentID: id, ParentID: parent, Label: label, Depth: depth, Type: typ, State: state, Reason: reason, Text: "report of " + id})
	}
	var b strings.Builder
	for _, e := range events {
		line, err := json.Marshal(e)
		require.NoError(t, err)
		b.Write(line)
		b.WriteByte('\n')
	}
	require.NoError(t, os.MkdirAll(dir, 0o700))
	f, err := os.OpenFile(filepath.Join(dir, file+".jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	require.NoError(t, err)
	_, err = f.WriteString(b.String())
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func TestRunsListShowsSubagentsUnderTheirParent(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	writeRun(t, runs, "old", "old", "", "", "explore", "an older run", t0.Add(-time.Hour), manager.Completed)
	writeRun(t, runs, "parent", "parent", "", "", "general", "review the change", t0, manager.Completed)
	writeRun(t, runs, "parent", "kid2", "parent", "correctness", "explore", "check the logic", t0.Add(2*time.Second), manager.Failed)
	writeRun(t, runs, "parent", "kid1", "parent", "security", "explore", "scan for holes", t0.Add(time.Second), manager.Completed)
	writeRun(t, runs, "orphan", "orphan", "pruned", "style", "explore", "its parent is gone", t0.Add(-2*time.Hour), manager.Completed)
	writeRun(t, runs, "newest", "newest", "", "", "explore", "the newest run", t0.Add(time.Hour), manager.Completed)

	o := runIn(t, runs, "runs", "list")
	require.Equal(t, 0, o.code, o.stderr)
	lines := strings.Split(strings.TrimSpace(o.stdout), "\n")
	require.Len(t, lines, 7, o.stdout)
	for i, want := range []string{
		`^ID\s+TYPE\s+STATE`,
		`^newest\s+explore\s+completed\s.*the newest run$`,
		`^parent\s+general\s+completed\s.*review the change$`,
		`^└ kid1\s+explore\s+completed\s.*\[security\] scan for holes$`,
		`^└ kid2\s+explore\s+failed\s.*\[correctness\] check the logic$`,
		`^old\s+explore\s+completed\s`,
		`^orphan\s+explore\s+completed\s.*\[style\] its parent is gone$`,
	} {
		assert.Regexp(t, regexp.MustCompile(want), lines[i], "line %d", i)
	}

	o = runIn(t, runs, "runs", "list", "--json")
	require.Equal(t, 0, o.code, o.stderr)
	var records []runRecord
	require.NoError(t, json.Unmarshal([]byte(o.stdout), &records))
	require.Len(t, records, 6)
	var order []string
	for _, r := range records {
		order = append(order, r.ID+"<"+r.ParentID)
	}
	assert.Equal(t, []string{"newest<", "parent<", "kid1<parent", "kid2<parent", "old<", "orphan<pruned"}, order, "tree order, each run naming its parent")
	assert.Equal(t, "security", records[2].Label)
	assert.Equal(t, 1, records[2].Depth)

	o = runIn(t, runs, "runs", "show", "kid2")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stdout, "▸ [correctness] explore#kid2 started: check the logic", "a child's run shows like any other")
	assert.Contains(t, o.stdout, "report of kid2")
	assert.Contains(t, o.stdout, "delegated by run parent ('troupe runs show parent')")

	o = runIn(t, runs, "runs", "show", "parent")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Regexp(t, `subagents .*\n\s+kid1\s+explore\s+completed\s+\[security\] scan for holes\n\s+kid2\s+explore\s+failed\s+\[correctness\]`, o.stdout)
}

// TestRunsListSubagentRunningWhileItsTreeRuns: a tree's agents share their
// process's transcript; they are running while the process holds its
// lock, and interrupted once that is gone.
func TestRunsListSubagentRunningWhileItsTreeRuns(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	t0 := time.Now()
	writeRun(t, runs, "top", "top", "", "", "general", "delegating", t0, manager.Running)
	writeRun(t, runs, "top", "mid", "top", "a", "general", "delegating further", t0, manager.Running)
	writeRun(t, runs, "top", "leaf", "mid", "b", "explore", "looking", t0, manager.Running)
	release := lockTranscript(filepath.Join(runs, "top.jsonl"))

	o := runIn(t, runs, "runs", "list")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Regexp(t, `(?m)^top\s+general\s+running\s`, o.stdout)
	assert.Regexp(t, `(?m)^└ mid\s+general\s+running\s`, o.stdout)
	assert.Regexp(t, `(?m)^  └ leaf\s+explore\s+running\s`, o.stdout)

	release()
	o = runIn(t, runs, "runs", "list")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Regexp(t, `(?m)^top\s+general\s+interrupted\s`, o.stdout)
	assert.Regexp(t, `(?m)^  └ leaf\s+explore\s+interrupted\s.*killed or crashed`, o.stdout)
}
