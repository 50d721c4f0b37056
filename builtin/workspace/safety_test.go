package workspace_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/gitsafe"
)

// hostileRepo makes newRepo's repository configure, for every program
// git could run while a workspace is made, changed, closed or merged, a
// program that leaves a marker in the returned directory.
func hostileRepo(t *testing.T) (repo, markers string) {
	t.Helper()
	repo, markers = newRepo(t), t.TempDir()
	pwn := func(name string) string { return "touch '" + filepath.Join(markers, name) + "'" }
	script := func(name string) string {
		p := filepath.Join(t.TempDir(), name)
		require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"+pwn(name)+"\ncat\n"), 0o755))
		return p
	}
	hooks := t.TempDir()
	for _, h := range []string{"post-checkout", "pre-commit", "prepare-commit-msg", "commit-msg", "post-commit",
		"post-merge", "reference-transaction", "post-index-change", "pre-auto-gc", "post-rewrite"} {
		require.NoError(t, os.WriteFile(filepath.Join(hooks, h), []byte("#!/bin/sh\n"+pwn("hook-"+h)+"\n"), 0o755))
	}
	write(t, repo, ".gitattributes", "*.txt filter=evil diff=evil\n")
	gitIn(t, repo, "add", ".gitattributes")
	gitIn(t, repo, "commit", "-q", "-m", "attributes")
	// The same hooks where git looks by default.
	require.NoError(t, os.CopyFS(filepath.Join(repo, ".git", "hooks"), os.DirFS(hooks)))
	settings := [][2]string{
		{"core.hooksPath", hooks},
		{"filter.evil.clean", pwn("filter-clean") + "; cat"}, {"filter.evil.smudge", pwn("filter-smudge") + "; cat"},
		{"filter.evil.process", pwn("filter-process")}, {"filter.evil.required", "true"},
		{"diff.evil.textconv", script("textconv")}, {"diff.evil.command", pwn("diff-command")},
		{"diff.external", script("diff-external")},
		{"core.fsmonitor", script("fsmonitor")}, {"core.pager", pwn("pager")},
		{"commit.gpgSign", "true"}, {"tag.gpgSign", "true"}, {"gpg.program", script("gpg")},
		{"gpg.format", "ssh"}, {"gpg.ssh.program", script("gpg-ssh")},
		{"core.editor", pwn("editor")}, {"gc.auto", "1"}, {"maintenance.auto", "true"},
	}
	for _, kv := range settings {
		gitIn(t, repo, "config", kv[0], kv[1])
	}
	// Checked however the test ends: a program run before a failure
	// counts.
	t.Cleanup(func() { noMarkers(t, markers) })
	return repo, markers
}

// Nothing the repository configures runs when workspaces are made,
// changed, closed and merged: no hook, filter, diff driver, fsmonitor,
// pager or signing program.
func TestHostileRepositoryRunsNothing(t *testing.T) {
	repo, _ := hostileRepo(t)
	write(t, repo, "keep.txt", "uncommitted\n") // a filtered file to clean
	ctx := context.Background()
	p := newProvider(t)
	parent := open(t, p, repo, "parent", nil)
	write(t, parent.Dir(), "p.txt", "p\n")
	a := open(t, p, parent.Dir(), "a", parent)
	b := open(t, p, parent.Dir(), "b", parent)
	write(t, a.Dir(), "f.txt", replaceLine(lines, 1, "one"))
	write(t, b.Dir(), "f.txt", replaceLine(lines, 1, "uno"))
	write(t, b.Dir(), "b.txt", "b\n")
	cha, chb := closeWS(t, a), closeWS(t, b)
	res, err := parent.Merge(ctx, cha)
	require.NoError(t, err)
	assert.Equal(t, []string{"f.txt"}, res.Files)
	res, err = parent.Merge(ctx, chb)
	require.NoError(t, err)
	assert.NotEmpty(t, res.Conflicts)
	ch := closeWS(t, parent)
	assert.NotEmpty(t, ch.Patch)
}

// A repository that would make git read outside it is refused as the
// git tool refuses it, and nothing is left behind.
func TestOpenRefusesARepositoryReachingOutside(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, repo, other string)
	}{
		{".git file naming another repository", func(t *testing.T, repo, other string) {
			require.NoError(t, os.RemoveAll(filepath.Join(repo, ".git")))
			write(t, repo, ".git", "gitdir: "+filepath.Join(other, ".git")+"\n")
		}},
		{"alternates outside", func(t *testing.T, repo, other string) {
			write(t, repo, ".git/objects/info/alternates", filepath.Join(other, ".git", "objects")+"\n")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo, other := newRepo(t), newRepo(t)
			tt.setup(t, repo, other)
			state := t.TempDir()
			p := newProviderAt(t, state)
			_, err := p.Open(context.Background(), agenttypes.WorkspaceRequest{Run: "r", Agent: "a", Dir: repo})
			require.ErrorIs(t, err, agenttypes.ErrWorkspace)
			require.ErrorIs(t, err, gitsafe.ErrOutsideRoot)
			assert.Empty(t, branches(t, other))
			assertNothingLeft(t, state)
		})
	}
}

// assertNothingLeft checks that a state directory holds no workspace,
// record or temporary file.
func assertNothingLeft(t *testing.T, state string) {
	t.Helper()
	for _, sub := range []string{"trees", "records", "tmp"} {
		entries, err := os.ReadDir(filepath.Join(state, sub))
		require.NoError(t, err)
		for _, e := range entries {
			t.Errorf("left behind: %s/%s", sub, e.Name())
		}
	}
}
