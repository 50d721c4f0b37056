package agenttypes_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
)

func pluginTool(name string) agenttypes.Tool {
	return &agenttypes.ToolFunc{ToolSpec: agenttypes.ToolSpec{Name: name, Description: "d", Parameters: json.RawMessage(`{"type":"object"}`)},
		Func: func(context.Context, json.RawMessage) (string, error) { return name, nil }}
}

func TestPluginTypesSitBetweenFilesAndBuiltins(t *testing.T) {
	reg := agenttypes.NewRegistry()
	require.NoError(t, reg.RegisterType(agenttypes.Type{Name: "explore", Description: "builtin", Source: "builtin"}))
	require.NoError(t, reg.RegisterType(agenttypes.Type{Name: "plan", Description: "builtin", Source: "builtin"}))
	require.NoError(t, reg.RegisterTool(pluginTool("read")))
	require.NoError(t, reg.SetPlugins([]agenttypes.Type{
		{Name: "explore", Description: "plugin", Source: "plugin:p"},
		{Name: "plan", Description: "plugin", Source: "plugin:p"},
		{Name: "only-plugin", Description: "plugin", Source: "plugin:p"},
	}, []agenttypes.Tool{pluginTool("shout")}))

	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".troupe", "agents"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".troupe", "agents", "plan.yaml"), []byte("name: plan\ndescription: file\nprompt: p\n"), 0o644))
	diags := reg.Reload(agenttypes.Sources{ProjectDir: dir, TrustProject: agenttypes.TrustAll})
	require.Empty(t, diags.Errors())

	got, err := reg.Type("explore")
	require.NoError(t, err)
	assert.Equal(t, "plugin:p", got.Source, "a plugin type hides a builtin one")
	assert.Equal(t, []string{"builtin"}, got.Shadows)
	got, err = reg.Type("plan")
	require.NoError(t, err)
	assert.Equal(t, "file", got.Description, "a file type hides a plugin one")
	assert.Equal(t, []string{"plugin:p", "builtin"}, got.Shadows)
	var names []string
	for _, ty := range reg.Types() {
		names = append(names, ty.Name+"="+ty.Source)
	}
	assert.Equal(t, []string{"explore=plugin:p", "only-plugin=plugin:p", "plan=" + filepath.Join(dir, ".troupe", "agents", "plan.yaml")}, names)

	tool, err := reg.Tool("shout")
	require.NoError(t, err)
	assert.Equal(t, "shout", tool.Spec().Name)
	assert.Len(t, reg.Tools(), 2)

	// A new set replaces the old one whole.
	require.NoError(t, reg.SetPlugins(nil, nil))
	got, err = reg.Type("explore")
	require.NoError(t, err)
	assert.Equal(t, "builtin", got.Source)
	_, err = reg.Tool("shout")
	assert.ErrorIs(t, err, agenttypes.ErrUnknownTool)
}

func TestSetPluginsRefusesClashes(t *testing.T) {
	reg := agenttypes.NewRegistry()
	require.NoError(t, reg.RegisterTool(pluginTool("read")))
	err := reg.SetPlugins(nil, []agenttypes.Tool{pluginTool("read")})
	require.ErrorIs(t, err, agenttypes.ErrDuplicate, "a plugin tool cannot take a builtin tool's name")
	err = reg.SetPlugins([]agenttypes.Type{{Name: "a", Description: "d"}, {Name: "a", Description: "d"}}, nil)
	require.ErrorIs(t, err, agenttypes.ErrDuplicate)
	err = reg.SetPlugins([]agenttypes.Type{{Name: "a b", Description: "d"}}, nil)
	require.ErrorIs(t, err, agenttypes.ErrInvalid)
	require.NoError(t, reg.SetPlugins(nil, []agenttypes.Tool{pluginTool("shout")}))
	require.ErrorIs(t, reg.RegisterTool(pluginTool("shout")), agenttypes.ErrDuplicate)
}

func TestRefusedPluginsNameWhatTheyOffer(t *testing.T) {
	reg := agenttypes.NewRegistry()
	require.NoError(t, reg.RegisterType(agenttypes.Type{Name: "explore", Description: "builtin", Source: "builtin"}))
	locked := errors.New("not in the lock file")
	reg.SetRefusedPlugins([]agenttypes.RefusedPlugin{{Name: "p", Types: []string{"deploy"}, Tools: []string{"shout"}, Reason: locked}})

	_, err := reg.Type("deploy")
	require.ErrorIs(t, err, agenttypes.ErrUnknownType)
	require.ErrorIs(t, err, locked)
	assert.EqualError(t, err, `type "deploy" comes from plugin p, which was refused: not in the lock file`)
	_, err = reg.Tool("shout")
	require.ErrorIs(t, err, agenttypes.ErrUnknownTool)
	assert.EqualError(t, err, `tool "shout" comes from plugin p, which was refused: not in the lock file`)
	_, err = reg.Type("nosuch")
	assert.EqualError(t, err, `unknown agent type "nosuch"; the types are explore`)

	// A refused plugin that never ran may offer any name.
	reg.SetRefusedPlugins([]agenttypes.RefusedPlugin{{Name: "q", Reason: locked}})
	_, err = reg.Type("deploy")
	assert.EqualError(t, err, `unknown agent type "deploy"; the types are explore; it may come from plugin q, which was refused, so what it offers is unknown: not in the lock file`)
	reg.SetRefusedPlugins([]agenttypes.RefusedPlugin{{Name: "q", Reason: locked}, {Name: "r", Reason: locked}})
	_, err = reg.Type("deploy")
	assert.EqualError(t, err, `unknown agent type "deploy"; the types are explore; it may come from plugins q, r, which were refused, so what they offer is unknown`)

	reg.SetRefusedPlugins(nil)
	_, err = reg.Type("deploy")
	assert.EqualError(t, err, `unknown agent type "deploy"; the types are explore`)
}
