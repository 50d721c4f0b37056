package plugins_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/plugins"
)

func TestAPluginTypeBringsItsWorkspaceRunPolicyAndSetup(t *testing.T) {
	h, _ := newHost(t, plugins.Config{}, pluginDir(t, "test"))
	reg := loaded(t, h)

	fixer, err := reg.Type("fixer")
	require.NoError(t, err)
	assert.Equal(t, "plugin:test", fixer.Source)
	assert.Equal(t, agenttypes.WorkspaceWorktree, fixer.Workspace)
	assert.Equal(t, []string{"go test", "go mod download"}, fixer.Run.Allow)
	assert.Equal(t, 90*time.Second, fixer.Run.Timeout)
	assert.True(t, fixer.Run.Network)
	assert.Equal(t, []string{"go mod download"}, fixer.Setup)
	assert.True(t, fixer.NeedsWorkspace())
	assert.True(t, fixer.Run.Allows([]string{"go", "test", "./..."}), "the run tool reads the plugin's list")
	assert.False(t, fixer.Run.Allows([]string{"rm", "-rf", "/"}))

	reader, err := reg.Type("reader")
	require.NoError(t, err)
	assert.Equal(t, agenttypes.WorkspaceNone, reader.Workspace)
	assert.False(t, reader.NeedsWorkspace())

	looper, err := reg.Type("looper")
	require.NoError(t, err)
	assert.Empty(t, looper.Workspace, "a type that says nothing of workspaces keeps the default")
	assert.Zero(t, looper.Run)
	assert.Empty(t, looper.Setup)
}

// Each unusable type is refused on its own, with an error that names the
// plugin, the type and what to change; the plugin's other types and tools
// load as they would without it.
func TestAPluginTypeWithAnUnusableRunPolicyIsRefusedAlone(t *testing.T) {
	h, logs := newHost(t, plugins.Config{Env: []string{"TESTPLUGIN_BAD_TYPES=1"}}, pluginDir(t, "test"))
	reg := agenttypes.NewRegistry()
	require.NoError(t, reg.RegisterType(agenttypes.Type{Name: "plain", Description: "builtin", Source: "builtin"}))
	problems := h.Load(ctxTimeout(t, 20*time.Second), reg)

	says := map[string]string{
		"bad-setup":            `setup command "npm ci" is not allowed by run.allow`,
		"bad-timeout":          "run.timeout is 1h0m0s; give a duration up to 30m0s",
		"bad-negative-timeout": "run.timeout is -1ms",
		"bad-operator":         `'|' is a shell operator`,
		"bad-none":             `workspace is "none", and the type lists "edit"`,
		"bad-mode":             `workspace is "tmpdir"; use "worktree" or "none"`,
		"bad-long-allow":       fmt.Sprintf("run.allow has 65 prefixes; keep it to %d", agenttypes.MaxRunAllow),
		"bad-long-entry":       fmt.Sprintf("keep each to %d", agenttypes.MaxCommandLength),
		"bad-long-setup":       fmt.Sprintf("setup has 17 commands; keep it to %d", agenttypes.MaxSetupCommands),
	}
	require.Len(t, problems, len(says), "%v", errors.Join(problems...))
	for name, want := range says {
		i := -1
		for j, p := range problems {
			if strings.Contains(p.Error(), fmt.Sprintf("type %q", name)) {
				i = j
			}
		}
		require.GreaterOrEqual(t, i, 0, "no problem names type %s among %v", name, errors.Join(problems...))
		err := problems[i]
		assert.ErrorIs(t, err, agenttypes.ErrInvalid, name)
		assert.True(t, strings.HasPrefix(err.Error(), "plugin test: "), "%s: the error names the plugin: %v", name, err)
		assert.Contains(t, err.Error(), want, name)
		assert.Contains(t, err.Error(), "the type is left out until the plugin fixes it", name)
		_, err = reg.Type(name)
		assert.ErrorIs(t, err, agenttypes.ErrUnknownType, "%s is not registered", name)
	}

	for _, name := range []string{"fixer", "reader", "looper", "plain", "runs-nothing"} {
		typ, err := reg.Type(name)
		require.NoError(t, err, name)
		assert.Equal(t, "plugin:test", typ.Source, name)
	}
	plain, _ := reg.Type("plain")
	assert.Equal(t, []string{"builtin"}, plain.Shadows)
	_, err := reg.Tool("shout")
	assert.NoError(t, err, "the plugin's tools load")

	nothing, err := reg.Type("runs-nothing")
	require.NoError(t, err, "a type whose run allows nothing is usable")
	assert.Empty(t, nothing.Run.Allow)
	assert.Contains(t, logs.String(), "lists run and allows no command")
	assert.Contains(t, logs.String(), "type=runs-nothing")
	assert.NotContains(t, logs.String(), "type=fixer", "a type that allows commands gets no warning")
}
