package workspace_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	hostileIncludes(t, repo, pwn)
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

// hostileIncludes makes the repository include, on conditions that
// hold only in some contexts, files that define filters its committed
// files use: on a troupe branch (a workspace's), in a linked worktree's
// git directory (a workspace's), and when a remote's URL matches (in
// every context). A listing of the configuration made in another context
// than the one git runs in would not see the first two.
func hostileIncludes(t *testing.T, repo string, pwn func(string) string) {
	t.Helper()
	conds := map[string]string{
		"onbranch": "onbranch:troupe/**",
		"wtgitdir": "gitdir:**/worktrees/**",
		"remote":   "hasconfig:remote.*.url:https://example.com/**",
	}
	var attrs strings.Builder
	for name := range conds {
		attrs.WriteString("*." + name + " filter=" + name + "\n")
		write(t, repo, "a."+name, name+"\n")
	}
	write(t, repo, ".gitattributes", read(t, repo, ".gitattributes")+attrs.String())
	gitIn(t, repo, "add", ".")
	gitIn(t, repo, "commit", "-q", "-m", "conditionally filtered files")
	// Set once the test's own git is done with these files.
	gitIn(t, repo, "config", "remote.origin.url", "https://example.com/project.git")
	for name, cond := range conds {
		inc := filepath.Join(t.TempDir(), name+".inc")
		require.NoError(t, os.WriteFile(inc, []byte(fmt.Sprintf("[filter %q]\n\tsmudge = %s; cat\n\tclean = %s; cat\n\tprocess = %s\n",
			name, pwn(name+"-smudge"), pwn(name+"-clean"), pwn(name+"-process"))), 0o644))
		gitIn(t, repo, "config", "includeIf."+cond+".path", inc)
	}
}

// Nothing the repository configures runs when workspaces are made,
// changed, closed and merged: no hook, filter, diff driver, fsmonitor,
// pager or signing program, whether its configuration names it outright
// or through a conditional include that holds only in a workspace.
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

// A conditional include that holds only in a workspace's own context (on
// its branch, or in its worktree's git directory) is listed and
// neutralised all the same: git checks the workspace out, records it and
// closes it in a context whose configuration was listed there. Each
// condition alone names a filter that committed files use.
func TestConditionalIncludesOfAWorkspacesOwnContextRunNothing(t *testing.T) {
	for _, cond := range []string{"onbranch:troupe/**", "gitdir:**/worktrees/**", "gitdir/i:**/WORKTREES/**",
		"hasconfig:remote.*.url:https://example.com/**"} {
		t.Run(cond, func(t *testing.T) {
			repo, markers := newRepo(t), t.TempDir()
			write(t, repo, ".gitattributes", "*.txt filter=x\n")
			gitIn(t, repo, "add", ".gitattributes")
			gitIn(t, repo, "commit", "-q", "-m", "attributes")
			inc := filepath.Join(t.TempDir(), "x.inc")
			require.NoError(t, os.WriteFile(inc, []byte("[filter \"x\"]\n\tsmudge = touch "+filepath.Join(markers, "smudge")+
				"; cat\n\tclean = touch "+filepath.Join(markers, "clean")+"; cat\n"), 0o644))
			gitIn(t, repo, "config", "remote.origin.url", "https://example.com/project.git")
			gitIn(t, repo, "config", "includeIf."+cond+".path", inc)
			p := newProvider(t)
			ws := open(t, p, repo, "a", nil)
			assert.Equal(t, lines, read(t, ws.Dir(), "f.txt"), "checked out in its stored form")
			write(t, ws.Dir(), "f.txt", "changed\n")
			ch := closeWS(t, ws)
			assert.Equal(t, []string{"f.txt"}, ch.Modified)
			noMarkers(t, markers)
		})
	}
}

// Merge points the worktree's HEAD back at its branch before it checks
// the merge out; a conditional include on that branch, which did not
// hold when the merge began (something had detached HEAD), is listed
// and neutralised before the checkout all the same.
func TestMergeChecksOutInTheContextItMadeItself(t *testing.T) {
	repo, markers := newRepo(t), t.TempDir()
	write(t, repo, ".gitattributes", "*.txt filter=x\n")
	gitIn(t, repo, "add", ".gitattributes")
	gitIn(t, repo, "commit", "-q", "-m", "attributes")
	inc := filepath.Join(t.TempDir(), "x.inc")
	require.NoError(t, os.WriteFile(inc, []byte("[filter \"x\"]\n\tsmudge = touch "+filepath.Join(markers, "smudge")+"; cat\n"), 0o644))
	gitIn(t, repo, "config", "includeIf.onbranch:troupe/**.path", inc)
	p := newProvider(t)
	parent := open(t, p, repo, "parent", nil)
	child := open(t, p, parent.Dir(), "child", parent)
	write(t, child.Dir(), "f.txt", "from the child\n")
	ch := closeWS(t, child)

	gitDir := gitIn(t, parent.Dir(), "rev-parse", "--absolute-git-dir")
	write(t, gitDir, "HEAD", gitIn(t, parent.Dir(), "rev-parse", "HEAD")+"\n")
	res, err := parent.Merge(context.Background(), ch)
	require.NoError(t, err)
	assert.Equal(t, []string{"f.txt"}, res.Files)
	assert.Equal(t, "from the child\n", read(t, parent.Dir(), "f.txt"))
	noMarkers(t, markers)
}
