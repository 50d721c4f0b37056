package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeNotes is a scripted model's run that writes notes.md and ends.
var writeNotes = []string{`CALL write {"path":"notes.md","content":"hello\n"}`, "wrote the notes"}

// changingRun runs general on repo with the session's model and returns
// the ID of the run, which changed files.
func changingRun(t *testing.T, repo string, args ...string) (string, outcome) {
	t.Helper()
	o := cmdIn(t, append([]string{"run", "general", "--model", "openai:m", "--repo", repo, "--progress", "plain"}, append(args, "change it")...)...)
	m := diffHint.FindStringSubmatch(o.stderr)
	require.NotNil(t, m, "the run says how to see its changes: %s", o.stderr)
	return m[1], o
}

// troupeBranches lists troupe's branches of the repository at dir.
func troupeBranches(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command("git", "for-each-ref", "--format=%(refname:short)", "refs/heads/troupe/")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	return strings.TrimSpace(string(out))
}

func TestRunsApplyWritesARunsChangesIntoTheTree(t *testing.T) {
	session(t, newChatServer(t, writeNotes...))
	repo := shopRepo(t)
	id, _ := changingRun(t, repo)

	o := cmdIn(t, "runs", "apply", id)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stderr, "applied run "+id+"'s changes to "+repo+": 1 file written, 0 files removed")
	assert.Contains(t, o.stderr, "not staged")
	data, err := os.ReadFile(filepath.Join(repo, "notes.md"))
	require.NoError(t, err)
	assert.Equal(t, "hello\n", string(data))
	assert.Equal(t, "?? notes.md\n", gitStatus(t, repo), "applied, not staged")

	o = cmdIn(t, "runs", "apply", id)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stderr, "holds run "+id+"'s changes already; nothing to do")

	o = cmdIn(t, "runs", "--json", "apply", id)
	require.Equal(t, 0, o.code, o.stderr)
	var res struct {
		UpToDate bool `json:"up_to_date"`
	}
	require.NoError(t, json.Unmarshal([]byte(o.stdout), &res), o.stdout)
	assert.True(t, res.UpToDate)
}

func TestRunsApplyRefusesAConflictAndChangesNothing(t *testing.T) {
	session(t, newChatServer(t, `CALL write {"path":"docs/README.md","content":"the agent's\u001b[2K\n"}`, "rewrote it"))
	repo := shopRepo(t)
	id, _ := changingRun(t, repo)
	readme := filepath.Join(repo, "docs", "README.md")
	require.NoError(t, os.WriteFile(readme, []byte("mine\n"), 0o644))

	o := cmdIn(t, "runs", "apply", id)
	assert.Equal(t, 1, o.code, o.stderr)
	assert.Contains(t, o.stderr, "run "+id+"'s changes do not apply to "+repo+"; nothing was changed")
	assert.Contains(t, o.stderr, "docs/README.md: CONFLICT")
	assert.Contains(t, o.stderr, "<<<<<<< yours")
	assert.Contains(t, o.stderr, `the agent's\x1b[2K`, "escape sequences are shown escaped")
	assert.NotContains(t, o.stderr, "\x1b")
	assert.Contains(t, o.stderr, "commit, stash or undo your own changes to that file")
	data, err := os.ReadFile(readme)
	require.NoError(t, err)
	assert.Equal(t, "mine\n", string(data))
	assert.Equal(t, " M docs/README.md\n", gitStatus(t, repo))
}

func TestRunsApplyAndDiscardOfARunWithoutChanges(t *testing.T) {
	session(t, newChatServer(t, "nothing to change"))
	repo := shopRepo(t)
	o := cmdIn(t, "run", "general", "--model", "openai:m", "--repo", repo, "--json", "--progress", "none", "look only")
	require.Equal(t, 0, o.code, o.stderr)
	var res jsonResult
	require.NoError(t, json.Unmarshal([]byte(o.stdout), &res), o.stdout)

	o = cmdIn(t, "runs", "apply", res.ID)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stderr, "run "+res.ID+" changed nothing; there is nothing to apply")
	assert.Empty(t, troupeBranches(t, repo), "a run that changed nothing leaves no branch")
	o = cmdIn(t, "runs", "discard", res.ID)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stderr, "run "+res.ID+" left no changes; there is nothing to discard")
	o = cmdIn(t, "runs", "discard", res.ID)
	require.Equal(t, 0, o.code, o.stderr)
}

func TestRunsApplyAndDiscardOfAnUnknownRun(t *testing.T) {
	for _, sub := range []string{"apply", "discard"} {
		o := troupe(t, "runs", sub, "no-such-run")
		assert.Equal(t, 2, o.code, o.stderr)
		assert.Contains(t, o.stderr, `no run "no-such-run"`)
		o = troupe(t, "runs", sub, "../x")
		assert.Equal(t, 2, o.code, o.stderr)
	}
}

func TestRunsDiscardDropsTheBranchAndPatch(t *testing.T) {
	session(t, newChatServer(t, writeNotes...))
	repo := shopRepo(t)
	id, _ := changingRun(t, repo)
	branch := troupeBranches(t, repo)
	require.NotEmpty(t, branch)
	patches, err := filepath.Glob(filepath.Join(os.Getenv("XDG_STATE_HOME"), "troupe", "workspaces", "patches", "*.patch"))
	require.NoError(t, err)
	require.Len(t, patches, 1)

	o := cmdIn(t, "runs", "discard", id)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stderr, "discarded run "+id+"'s changes: 1 branch "+branch)
	assert.Empty(t, troupeBranches(t, repo))
	assert.NoFileExists(t, patches[0])
	assert.Empty(t, gitStatus(t, repo), "the user's tree is untouched")

	o = cmdIn(t, "runs", "discard", id)
	assert.Equal(t, 0, o.code, "discarding twice is harmless: %s", o.stderr)
	o = cmdIn(t, "runs", "apply", id)
	assert.Equal(t, 1, o.code)
	assert.Contains(t, o.stderr, "discarded")
	assert.NoFileExists(t, filepath.Join(repo, "notes.md"))
}

func TestRunApplyOffATerminalNeedsYes(t *testing.T) {
	session(t, newChatServer(t, append(writeNotes, writeNotes...)...))
	repo := shopRepo(t)
	o := cmdIn(t, "run", "general", "--apply", "--model", "openai:m", "--repo", repo, "--progress", "plain", "write notes")
	assert.Equal(t, 1, o.code, o.stderr)
	assert.Contains(t, o.stderr, "notes.md | 1 +", "the diffstat is shown")
	assert.Contains(t, o.stderr, "--apply: nothing was applied, since there is no terminal to ask on; pass --yes")
	assert.Empty(t, gitStatus(t, repo))

	o = cmdIn(t, "run", "general", "--apply", "--yes", "--model", "openai:m", "--repo", repo, "--progress", "plain", "write notes")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stderr, "notes.md | 1 +")
	assert.Contains(t, o.stderr, "'s changes to "+repo+": 1 file written")
	assert.NotContains(t, o.stderr, "your tree is untouched")
	assert.Equal(t, "?? notes.md\n", gitStatus(t, repo))
}

// runOnTerminal runs troupe as on a terminal where the user types input.
func runOnTerminal(t *testing.T, input string, args ...string) outcome {
	t.Helper()
	var out, errb bytes.Buffer
	a := newApp(&out, &errb)
	a.stdin = strings.NewReader(input)
	a.isTerminal = func(any) bool { return true }
	code := a.execute(context.Background(), args)
	return outcome{code, out.String(), errb.String()}
}

func TestRunApplyAsksOnATerminal(t *testing.T) {
	session(t, newChatServer(t, append(writeNotes, writeNotes...)...))
	repo := shopRepo(t)
	args := []string{"run", "general", "--apply", "--model", "openai:m", "--repo", repo, "--progress", "plain", "write notes"}
	o := runOnTerminal(t, "n\n", args...)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stderr, "Apply these changes to "+repo+"? [y/N] ")
	assert.Contains(t, o.stderr, "not applied; 'troupe runs apply ")
	assert.Empty(t, gitStatus(t, repo))

	o = runOnTerminal(t, "y\n", args...)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stderr, "Apply these changes to "+repo+"? [y/N] ")
	assert.Equal(t, "?? notes.md\n", gitStatus(t, repo))
}

// When old transcripts are pruned, their runs' branches and patches go
// with them.
func TestPrunedRunsLeaveNoBranches(t *testing.T) {
	session(t, newChatServer(t, append(writeNotes, "nothing to change")...))
	repo := shopRepo(t)
	_, _ = changingRun(t, repo)
	first := troupeBranches(t, repo)
	require.NotEmpty(t, first)
	transcripts, err := filepath.Glob(filepath.Join(os.Getenv("TROUPE_RUNS_DIR"), "*.jsonl"))
	require.NoError(t, err)
	require.Len(t, transcripts, 1)
	old := time.Now().Add(-30 * 24 * time.Hour)
	require.NoError(t, os.Chtimes(transcripts[0], old, old))

	o := cmdIn(t, "run", "general", "--model", "openai:m", "--repo", repo, "--progress", "none", "look only")
	require.Equal(t, 0, o.code, o.stderr)
	assert.NoFileExists(t, transcripts[0])
	assert.NotContains(t, troupeBranches(t, repo), first)
	patches, err := filepath.Glob(filepath.Join(os.Getenv("XDG_STATE_HOME"), "troupe", "workspaces", "patches", "*.patch"))
	require.NoError(t, err)
	assert.Empty(t, patches)
}
