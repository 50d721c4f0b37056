//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/manager"
)

func TestRunsShowTakesAnIDPrefix(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	o := runIn(t, runs, "run", "explore", "--repo", shop, "--json", "--progress", "none", "ChargeWithRetry")
	require.Equal(t, 0, o.code, o.stderr)
	var res jsonResult
	require.NoError(t, json.Unmarshal([]byte(o.stdout), &res))
	require.Greater(t, len(res.ID), 8)

	for _, id := range []string{res.ID, res.ID[:8], "explore#" + res.ID[:8], res.ID[:4]} {
		o = runIn(t, runs, "runs", "show", id)
		require.Equal(t, 0, o.code, "%s: %s", id, o.stderr)
		assert.Contains(t, o.stdout, "## Findings", id)
		assert.Contains(t, o.stdout, "ChargeWithRetry", id)
	}
}

func TestRunsShowSaysWhenAPrefixIsAmbiguous(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	for i := range 7 {
		id := fmt.Sprintf("5eed%04d-0000-4000-8000-000000000000", i)
		writeRun(t, runs, fmt.Sprintf("file-%d", i), id, "", "", "explore", "task "+id[:8], t0.Add(time.Duration(i)*time.Minute), manager.Completed)
	}

	o := runIn(t, runs, "runs", "show", "5eed")
	assert.Equal(t, exitUsage, o.code, o.stderr)
	assert.Empty(t, o.stdout)
	assert.Contains(t, o.stderr, `run ID "5eed" is ambiguous: it starts 7 runs' IDs`)
	// The newest few, and how many more.
	shown := regexp.MustCompile(`5eed\d{4}-[-0-9]+ \(explore\)`).FindAllString(o.stderr, -1)
	assert.Len(t, shown, 5, o.stderr)
	assert.Contains(t, shown[0], "5eed0006")
	assert.Contains(t, o.stderr, "and 2 more; give more characters of the ID")

	o = runIn(t, runs, "runs", "show", "5eed0003")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stdout, "report of 5eed0003-0000-4000-8000-000000000000")

	o = runIn(t, runs, "runs", "diff", "5eed0003")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Equal(t, "run 5eed0003-0000-4000-8000-000000000000 changed nothing\n", o.stderr, "the other commands that take a run's ID take a prefix too")
}

func TestRunsShowOfAnUnknownIDSaysHowToListRuns(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	writeRun(t, runs, "file", "5eed0000-0000-4000-8000-000000000000", "", "", "explore", "a run", time.Now(), manager.Completed)
	for id, want := range map[string]string{
		"feedface": `no run "feedface" in ` + runs + `; 'troupe runs list' shows the latest runs, 'troupe runs list --limit 0' all of them`,
		"5ee":      `no run "5ee" in ` + runs + `; give the whole ID, or at least its first 4 characters`,
		"../etc":   `run ID "../etc": give the ID that 'troupe runs list' prints`,
	} {
		o := runIn(t, runs, "runs", "show", id)
		assert.Equal(t, exitUsage, o.code, "%s: %s", id, o.stderr)
		assert.Empty(t, o.stdout)
		assert.Contains(t, o.stderr, want)
	}
}

// TestRunsShowTypeAndIDNamesARunOfThatType: TYPE#ID, as progress lines
// print it, picks among runs whose IDs share the prefix by their type,
// and names no run of another type.
func TestRunsShowTypeAndIDNamesARunOfThatType(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	writeRun(t, runs, "a", "aaaa0001-0000-4000-8000-000000000000", "", "", "explore", "task a", t0, manager.Completed)
	writeRun(t, runs, "b", "aaaa0002-0000-4000-8000-000000000000", "", "", "general", "task b", t0.Add(time.Minute), manager.Completed)

	o := runIn(t, runs, "runs", "show", "general#aaaa")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stdout, "report of aaaa0002")

	o = runIn(t, runs, "runs", "show", "plan#aaaa")
	assert.Equal(t, exitUsage, o.code)
	assert.Empty(t, o.stdout)
	assert.Contains(t, o.stderr, `no plan run "aaaa"`)
	assert.Contains(t, o.stderr, "'troupe runs list --type plan'")
}

// TestRunsShowTakesTheTranscriptsName: the name of the transcript a run
// ends by naming shows that run, though it is not the agent's ID.
func TestRunsShowTakesTheTranscriptsName(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	o := runIn(t, runs, "run", "explore", "--repo", shop, "--json", "--progress", "none", "ChargeWithRetry")
	require.Equal(t, 0, o.code, o.stderr)
	var res jsonResult
	require.NoError(t, json.Unmarshal([]byte(o.stdout), &res))
	files, err := filepath.Glob(filepath.Join(runs, "*.jsonl"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	name := strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")
	require.NotEqual(t, res.ID, name, "the transcript is named apart from the agent")

	o = runIn(t, runs, "runs", "show", name)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stdout, "ChargeWithRetry")
	assert.Contains(t, o.stdout, "explore#"+res.ID[:8])
}
