//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/manager"
)

// runsOfMany writes 25 runs, run-00 (oldest) to run-24 (newest): every
// fifth a general run that failed, the others explore runs that
// completed. run-23 delegated to two explore subagents, one of which
// failed.
func runsOfMany(t *testing.T) string {
	t.Helper()
	runs := filepath.Join(t.TempDir(), "runs")
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	for i := range 25 {
		id := fmt.Sprintf("run-%02d", i)
		typ, state := "explore", manager.Completed
		if i%5 == 0 {
			typ, state = "general", manager.Failed
		}
		writeRun(t, runs, id, id, "", "", typ, "task "+id, t0.Add(time.Duration(i)*time.Minute), state)
	}
	writeRun(t, runs, "run-23", "kid-a", "run-23", "a", "explore", "look here", t0.Add(23*time.Minute+time.Second), manager.Completed)
	writeRun(t, runs, "run-23", "kid-b", "run-23", "b", "explore", "look there", t0.Add(23*time.Minute+2*time.Second), manager.Failed)
	return runs
}

// ids are the IDs of runs list's rows, in order, subagents' marked.
func ids(t *testing.T, stdout string) []string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
	require.Regexp(t, `^ID\s+TYPE\s+STATE`, lines[0])
	var out []string
	for _, l := range lines[1:] {
		out = append(out, strings.Join(strings.Fields(l)[:1+strings.Count(l, "└")], " "))
	}
	return out
}

func seq(from, to int) []string {
	var out []string
	for i := from; i >= to; i-- {
		out = append(out, fmt.Sprintf("run-%02d", i))
		if i == 23 {
			out = append(out, "└ kid-a", "└ kid-b")
		}
	}
	return out
}

func TestRunsListShowsTheLatest20AndSaysHowManyMore(t *testing.T) {
	runs := runsOfMany(t)

	o := runIn(t, runs, "runs", "list")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Equal(t, seq(24, 5), ids(t, o.stdout), "the 20 newest runs, subagents under their parent")
	assert.Equal(t, "5 older runs not shown; 'troupe runs list --limit 0' lists them all\n", o.stderr)

	o = runIn(t, runs, "runs", "list", "--limit", "0")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Equal(t, seq(24, 0), ids(t, o.stdout))
	assert.Empty(t, o.stderr)

	o = runIn(t, runs, "runs", "list", "--limit", "2")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Equal(t, seq(24, 23), ids(t, o.stdout), "a run's subagents come with it")
	assert.Equal(t, "23 older runs not shown; 'troupe runs list --limit 0' lists them all\n", o.stderr)

	o = runIn(t, runs, "runs", "list", "--limit", "25")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Equal(t, seq(24, 0), ids(t, o.stdout))
	assert.Empty(t, o.stderr, "nothing left out, nothing said")

	o = runIn(t, runs, "runs", "list", "--json", "--limit", "1")
	require.Equal(t, 0, o.code, o.stderr)
	var records []runRecord
	require.NoError(t, json.Unmarshal([]byte(o.stdout), &records), "stdout is JSON alone")
	require.Len(t, records, 1)
	assert.Equal(t, "run-24", records[0].ID)
	assert.Equal(t, "24 older runs not shown; 'troupe runs list --limit 0' lists them all\n", o.stderr)
}

func TestRunsListByTypeAndState(t *testing.T) {
	runs := runsOfMany(t)

	o := runIn(t, runs, "runs", "list", "--type", "general")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Equal(t, []string{"run-20", "run-15", "run-10", "run-05", "run-00"}, ids(t, o.stdout))
	assert.Empty(t, o.stderr)

	o = runIn(t, runs, "runs", "list", "--state", "failed", "--limit", "3")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Equal(t, []string{"kid-b", "run-20", "run-15"}, ids(t, o.stdout), "a failed subagent stands alone when its parent did not fail")
	assert.Equal(t, "3 older runs not shown; 'troupe runs list --state failed --limit 0' lists them all\n", o.stderr)

	o = runIn(t, runs, "runs", "list", "--type", "explore", "--state", "failed")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Equal(t, []string{"kid-b"}, ids(t, o.stdout))

	o = runIn(t, runs, "runs", "list", "--type", "explorer")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Empty(t, ids(t, o.stdout))
	assert.Equal(t, "no run matches --type explorer; 'troupe runs list' lists the latest runs\n", o.stderr)

	for _, bad := range [][]string{{"--state", "done"}, {"--state", "Completed"}, {"--limit", "-1"}} {
		o = runIn(t, runs, append([]string{"runs", "list"}, bad...)...)
		assert.Equal(t, exitUsage, o.code, "%v: %s", bad, o.stderr)
		assert.Empty(t, o.stdout)
	}
	o = runIn(t, runs, "runs", "list", "--state", "done")
	assert.Contains(t, o.stderr, `--state "done": use one of pending, running, completed, failed, cancelled, interrupted, unreadable`)
}
