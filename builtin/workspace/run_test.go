package workspace_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/workspace"
)

// shell lets a test's commands be small shell scripts.
var shell = agenttypes.RunPolicy{Allow: []string{"sh -c"}}

func runProvider(t *testing.T, allow func(string) error) *workspace.Provider {
	t.Helper()
	state := t.TempDir()
	p, err := workspace.New(workspace.Config{
		StateDir: state, ExcludesFile: filepath.Join(state, "no-excludes"),
		AllowRun: allow, CacheDir: filepath.Join(state, "cache"),
	})
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return p
}

func openWith(t *testing.T, p *workspace.Provider, dir string, policy agenttypes.RunPolicy, setup ...string) *workspace.Workspace {
	t.Helper()
	ws, err := p.Open(context.Background(), agenttypes.WorkspaceRequest{Run: "run-1", Agent: "a1", Dir: dir, Policy: policy, Setup: setup})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = ws.Close(context.Background()) })
	return ws.(*workspace.Workspace)
}

func sh(script string) agenttypes.Command {
	return agenttypes.Command{Args: []string{"sh", "-c", script}}
}

func TestRunRefusesUnlessTheProgramAllowsCommandsInTheProject(t *testing.T) {
	repo := newRepo(t)
	ws := openWith(t, runProvider(t, nil), repo, shell)
	_, err := ws.Run(context.Background(), sh("touch ran"))
	require.ErrorIs(t, err, agenttypes.ErrRunRefused)
	assert.Contains(t, err.Error(), "AllowRun")

	var asked string
	ws = openWith(t, runProvider(t, func(project string) error {
		asked = project
		return errors.New("the project is not trusted; run 'troupe trust'")
	}), repo, shell)
	_, err = ws.Run(context.Background(), sh("touch ran"))
	require.ErrorIs(t, err, agenttypes.ErrRunRefused)
	assert.Contains(t, err.Error(), "troupe trust", "the program's refusal is what the agent reads")
	real, _ := filepath.EvalSymlinks(repo)
	assert.Equal(t, real, asked, "asked about the project, not the workspace")
	missing(t, ws.Dir(), "ran")
}

func TestRunRefusesACommandThePolicyDoesNotAllow(t *testing.T) {
	repo := newRepo(t)
	ws := openWith(t, runProvider(t, func(string) error { return nil }), repo, agenttypes.RunPolicy{Allow: []string{"go test", "make"}})
	for _, args := range [][]string{{"sh", "-c", "touch ran"}, {"go", "vet"}, {"rm", "-rf", "."}, {}} {
		_, err := ws.Run(context.Background(), agenttypes.Command{Args: args})
		require.ErrorIs(t, err, agenttypes.ErrRunRefused, "%q", args)
	}
	_, err := ws.Run(context.Background(), sh("x"))
	assert.Contains(t, err.Error(), "go test, make", "the refusal names what may run")
	missing(t, ws.Dir(), "ran")
}

func TestRunRunsInTheWorkspaceAndReportsHowTheCommandEnded(t *testing.T) {
	repo := newRepo(t)
	ws := openWith(t, runProvider(t, func(string) error { return nil }), repo, shell)
	res, err := ws.Run(context.Background(), sh("pwd; cat f.txt | head -1; echo made > new.txt; exit 3"))
	require.NoError(t, err, "a command that ran and failed is a result")
	assert.Equal(t, 3, res.ExitCode)
	real, _ := filepath.EvalSymlinks(ws.Dir())
	assert.Contains(t, res.Output, real)
	assert.Contains(t, res.Output, "1\n")
	assert.Equal(t, "made\n", read(t, ws.Dir(), "new.txt"), "it writes in the workspace")
	missing(t, repo, "new.txt")

	ch := closeWS(t, ws)
	assert.Contains(t, ch.Added, "new.txt", "what a command wrote is the agent's work")
}

func TestRunGivesACommandNoKeyAndNoTroupeVariable(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-not-for-commands")
	t.Setenv("TROUPE_MODEL", "openai:gpt-4o")
	repo := newRepo(t)
	ws := openWith(t, runProvider(t, func(string) error { return nil }), repo, shell)
	res, err := ws.Run(context.Background(), sh("env"))
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, res.Output)
	assert.NotContains(t, res.Output, "sk-not-for-commands")
	assert.NotContains(t, res.Output, "TROUPE_")
	assert.Contains(t, res.Output, "TMPDIR=", "a private temporary directory")
}

func TestRunCannotWriteOutsideItsWorkspaceWhereConfined(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	repo := newRepo(t)
	ws := openWith(t, runProvider(t, func(string) error { return nil }), repo, shell)
	res, err := ws.Run(context.Background(), sh(`echo x > "$HOME/x"; echo y > "`+repo+`/y"; echo z > "$TMPDIR/z" && echo tmp-ok; echo w > w.txt && echo ws-ok`))
	require.NoError(t, err)
	if !res.Confined.Writes {
		t.Skip("this platform cannot confine a command's writes (no Landlock)")
	}
	missing(t, home, "x")
	missing(t, repo, "y")
	assert.Contains(t, res.Output, "tmp-ok")
	assert.Contains(t, res.Output, "ws-ok")
	_, err = os.Stat(filepath.Join(ws.Dir(), "w.txt"))
	assert.NoError(t, err)
}

func TestSetupCommandsPrepareANewWorkspace(t *testing.T) {
	repo := newRepo(t)
	p := runProvider(t, func(string) error { return nil })
	ws := openWith(t, p, repo, shell, `sh -c "echo ready > .prepared"`)
	assert.Equal(t, "ready\n", read(t, ws.Dir(), ".prepared"))

	_, err := p.Open(context.Background(), agenttypes.WorkspaceRequest{Run: "run-1", Agent: "a2", Dir: repo, Policy: shell, Setup: []string{`sh -c "exit 4"`}})
	require.ErrorIs(t, err, agenttypes.ErrWorkspace)
	assert.Contains(t, err.Error(), "status 4")
}

// The project's repository may lie where a command without network sees
// nothing (in /tmp, say): git still works in its workspace, whose .git
// names a directory of that repository.
func TestRunWithoutNetworkStillUsesGitInTheWorkspace(t *testing.T) {
	repo := newRepo(t)
	// The whole project lies where the host's sockets are hidden.
	t.Setenv("XDG_RUNTIME_DIR", repo)
	ws := openWith(t, runProvider(t, func(string) error { return nil }), repo, shell)
	res, err := ws.Run(context.Background(), sh(`git log --format=%s -1 && git status --porcelain && echo clean`))
	require.NoError(t, err)
	if !res.Confined.Network {
		t.Log("the host's sockets could not be hidden here: the repository was in sight anyway")
	}
	assert.Equal(t, 0, res.ExitCode, res.Output)
	assert.Contains(t, res.Output, "clean")
}
