package agenttypes_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
)

func TestSplitCommandSplitsLikeAShellWithoutExpandingAnything(t *testing.T) {
	for line, want := range map[string][]string{
		"go test ./...":                   {"go", "test", "./..."},
		"  go   vet\t./x  ":               {"go", "vet", "./x"},
		`go test -run 'TestA B'`:          {"go", "test", "-run", "TestA B"},
		`echo "a \"b\" \\c \n"`:           {"echo", `a "b" \c \n`},
		`echo a\ b`:                       {"echo", "a b"},
		`echo 'it''s'`:                    {"echo", "its"},
		`echo '$HOME' "*" '|'`:            {"echo", "$HOME", "*", "|"},
		`echo ""`:                         {"echo", ""},
		"":                                nil,
		`sh -c 'go test ./... | tail -5'`: {"sh", "-c", "go test ./... | tail -5"},
	} {
		got, err := agenttypes.SplitCommand(line)
		require.NoError(t, err, line)
		assert.Equal(t, want, got, line)
	}
}

func TestSplitCommandRefusesWhatOnlyAShellWouldMean(t *testing.T) {
	for _, line := range []string{
		"go test ./... | tail", "make; rm -rf /", "go test > out", "echo $(id)", "echo `id`",
		"echo $HOME", "go test &", "echo 'open", `echo "open`, `echo \`, "(make)",
	} {
		_, err := agenttypes.SplitCommand(line)
		require.ErrorIs(t, err, agenttypes.ErrCommandSyntax, line)
	}
}

func TestARunPolicyAllowsCommandsByWholeWordPrefixes(t *testing.T) {
	p := agenttypes.RunPolicy{Allow: []string{"go test", "make", "npm run build"}}
	for cmd, want := range map[string]bool{
		"go test ./...":      true,
		"go test":            true,
		"go testing":         false, // a word, not a string prefix
		"go vet ./...":       false,
		"make":               true,
		"make -C x test":     true,
		"makefoo":            false,
		"npm run build":      true,
		"npm run":            false,
		"npm run buildx":     false,
		"rm -rf /":           false,
		"sh -c 'go test'":    false, // a shell only when the list names it
		"'go test' x":        false,
		"/usr/bin/go test x": false,
	} {
		args, err := agenttypes.SplitCommand(cmd)
		require.NoError(t, err)
		assert.Equal(t, want, p.Allows(args), cmd)
	}
	assert.False(t, agenttypes.RunPolicy{}.Allows([]string{"go"}), "an empty list allows nothing")
}

func TestARunPolicysTimeoutBoundsWhatACallAsks(t *testing.T) {
	p := agenttypes.RunPolicy{Timeout: time.Minute}
	assert.Equal(t, time.Minute, p.TimeoutFor(0))
	assert.Equal(t, time.Minute, p.TimeoutFor(time.Hour), "a call may not ask for more")
	assert.Equal(t, 5*time.Second, p.TimeoutFor(5*time.Second))
	assert.Equal(t, agenttypes.DefaultRunTimeout, agenttypes.RunPolicy{}.TimeoutFor(0))
}

func TestATypesWorkspaceFieldsAreValidated(t *testing.T) {
	base := agenttypes.Type{Name: "fixer", Description: "fixes", Tools: []string{"read", "write"}}
	require.NoError(t, base.Validate())
	assert.True(t, base.NeedsWorkspace(), "a changing tool means a workspace")
	reader := agenttypes.Type{Name: "r", Description: "reads", Tools: []string{"read"}}
	assert.False(t, reader.NeedsWorkspace())
	reader.Workspace = agenttypes.WorkspaceWorktree
	assert.True(t, reader.NeedsWorkspace(), "asked for")

	for name, tc := range map[string]struct {
		mutate func(*agenttypes.Type)
		says   string
	}{
		"none with write":   {func(t *agenttypes.Type) { t.Workspace = agenttypes.WorkspaceNone }, `lists "write"`},
		"unknown mode":      {func(t *agenttypes.Type) { t.Workspace = "tmpdir" }, `use "worktree" or "none"`},
		"operator in allow": {func(t *agenttypes.Type) { t.Run.Allow = []string{"go test | tee"} }, "shell operator"},
		"empty allow entry": {func(t *agenttypes.Type) { t.Run.Allow = []string{"  "} }, "empty entry"},
		"timeout too long":  {func(t *agenttypes.Type) { t.Run.Timeout = time.Hour }, "up to 30m"},
		"setup not allowed": {func(t *agenttypes.Type) { t.Setup = []string{"npm ci"} }, "not allowed by run.allow"},
		"none with setup": {func(t *agenttypes.Type) {
			t.Tools, t.Workspace = []string{"read"}, agenttypes.WorkspaceNone
			t.Run.Allow, t.Setup = []string{"npm ci"}, []string{"npm ci"}
		}, "names setup commands"},
	} {
		typ := base
		tc.mutate(&typ)
		err := typ.Validate()
		require.ErrorIs(t, err, agenttypes.ErrInvalid, name)
		assert.Contains(t, err.Error(), tc.says, name)
	}
	ok := base
	ok.Run = agenttypes.RunPolicy{Allow: []string{"npm ci", "npm test"}, Timeout: time.Minute}
	ok.Setup = []string{"npm ci --no-audit"}
	require.NoError(t, ok.Validate())
}
