package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shopRepo is a copy of the shop as a git repository of its own, with
// one commit.
func shopRepo(t *testing.T) string {
	t.Helper()
	dir := shopCopy(t)
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."}, {"commit", "-q", "-m", "shop"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
			"GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@example.com", "GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@example.com")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
	}
	return dir
}

func gitStatus(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command("git", "status", "--porcelain")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	return string(out)
}

var diffHint = regexp.MustCompile(`'troupe runs diff ([0-9a-f-]+)'`)

func TestARunThatChangesFilesLeavesTheTreeAndSaysHowToApply(t *testing.T) {
	srv := newChatServer(t, `CALL write {"path":"notes.md","content":"hello\n"}`, "wrote the notes")
	session(t, srv)
	repo := shopRepo(t)
	o := cmdIn(t, "run", "general", "--model", "openai:m", "--repo", repo, "--progress", "plain", "write notes")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stdout, "wrote the notes")
	assert.Contains(t, o.stderr, "changed 1 file (+1 −0) on branch troupe/")
	assert.Contains(t, o.stderr, "notes.md")
	assert.Contains(t, o.stderr, "completed · 1 file changed", "progress says it too")
	_, err := os.Stat(filepath.Join(repo, "notes.md"))
	assert.ErrorIs(t, err, os.ErrNotExist, "the user's tree is untouched")
	assert.Empty(t, gitStatus(t, repo))

	m := diffHint.FindStringSubmatch(o.stderr)
	require.NotNil(t, m, "the run says how to see its changes: %s", o.stderr)
	o = cmdIn(t, "runs", "diff", m[1])
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stdout, "+++ b/notes.md")
	assert.Contains(t, o.stdout, "+hello")
}

func TestARunThatChangesNothingSaysNothingOfChanges(t *testing.T) {
	session(t, newChatServer(t, "nothing to change"))
	repo := shopRepo(t)
	o := cmdIn(t, "run", "general", "--model", "openai:m", "--repo", repo, "--progress", "plain", "look only")
	require.Equal(t, 0, o.code, o.stderr)
	assert.NotContains(t, o.stderr, "runs apply")
	assert.Empty(t, gitStatus(t, repo))
}

func TestCommandsRunOnlyInATrustedProject(t *testing.T) {
	srv := newChatServer(t, `CALL run {"command":"go vet ./..."}`, "tried", `CALL run {"command":"go vet ./..."}`, "ran")
	session(t, srv)
	repo := shopRepo(t)
	o := cmdIn(t, "run", "general", "--model", "openai:m", "--repo", repo, "--progress", "none", "vet it")
	require.Equal(t, 0, o.code, o.stderr)
	bodies := srv.received()
	require.Len(t, bodies, 2)
	refused := lastToolMessage(t, bodies[1])
	assert.Contains(t, refused, "command refused")
	assert.Contains(t, refused, "troupe trust --repo", "untrusted, the command is refused with how to allow it")

	trustRepo(t, repo)
	o = cmdIn(t, "run", "general", "--model", "openai:m", "--repo", repo, "--progress", "none", "vet it")
	require.Equal(t, 0, o.code, o.stderr)
	bodies = srv.received()
	require.Len(t, bodies, 4)
	ran := lastToolMessage(t, bodies[3])
	assert.NotContains(t, ran, "refused")
	assert.Regexp(t, `exit status \d+`, ran, "trusted, the command ran")
	assert.Contains(t, ran, "network", "the result says how the command was confined")
}

// lastToolMessage is the content of the last tool message of a chat
// request body.
func lastToolMessage(t *testing.T, body string) string {
	t.Helper()
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &req))
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "tool" {
			return req.Messages[i].Content
		}
	}
	t.Fatalf("no tool message in %s", body)
	return ""
}
