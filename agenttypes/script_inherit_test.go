package agenttypes_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
)

// fakeScripts compiles a script into hooks that say which type's script
// they came from: Prompt returns the first line of the source after
// "package hooks", and each script tool answers with its own name.
type fakeScripts struct{}

func (fakeScripts) Compile(_ context.Context, _ string, s *agenttypes.Scripts) (*agenttypes.Hooks, agenttypes.Diagnostics) {
	h := &agenttypes.Hooks{}
	if s.Hooks != nil {
		src := strings.TrimSpace(strings.TrimPrefix(s.Hooks.Source, "package hooks"))
		h.Prompt = func(context.Context, agenttypes.ScriptTask) (string, error) { return src, nil }
	}
	for _, st := range s.Tools {
		name := st.Name
		h.Tools = append(h.Tools, &agenttypes.ToolFunc{
			ToolSpec: agenttypes.ToolSpec{Name: name, Description: st.Description, ReadOnly: true},
			Func:     func(context.Context, json.RawMessage) (string, error) { return name, nil },
		})
	}
	return h, nil
}

func prompt(t *testing.T, typ agenttypes.Type) string {
	t.Helper()
	require.NotNil(t, typ.Hooks)
	require.NotNil(t, typ.Hooks.Prompt, typ.Name)
	s, err := typ.Hooks.Prompt(context.Background(), agenttypes.ScriptTask{})
	require.NoError(t, err)
	return s
}

func scriptToolNames(typ agenttypes.Type) []string {
	var out []string
	for _, tool := range typ.Hooks.Tools {
		out = append(out, tool.Spec().Name)
	}
	return out
}

// An extending type keeps the parent's hooks (script:, script_file:)
// unless it declares its own, and the parent's script tools unless it
// declares script_tools of its own: each of the two is inherited on its
// own, and every tool a type lists is one it has.
func TestExtendingTypeKeepsItsParentsHooksUnlessItDeclaresItsOwn(t *testing.T) {
	reg := testRegistry(t)
	reg.SetScriptCompiler(fakeScripts{})
	dir := t.TempDir()
	tool := func(name string) string {
		return "  - name: " + name + "\n    description: the " + name + " tool.\n    script: |\n      package hooks\n"
	}
	paths := []string{
		write(t, dir, "parent.yaml", "name: parent\ndescription: d.\nscript: |\n  package hooks\n  parent hooks\nscript_tools:\n"+tool("parent_tool")),
		write(t, dir, "plain.yaml", "name: plain\nextends: parent\n"),
		write(t, dir, "hooked.yaml", "name: hooked\nextends: parent\nscript: |\n  package hooks\n  hooked hooks\n"),
		write(t, dir, "tooled.yaml", "name: tooled\nextends: parent\nscript_tools:\n"+tool("tooled_tool")),
	}
	types, diags := agenttypes.LoadFiles(agenttypes.LoadOptions{Registry: reg, TrustScripts: agenttypes.TrustAll}, paths...)
	require.False(t, diags.HasErrors(), diags.String())
	byName := map[string]agenttypes.Type{}
	for _, typ := range types {
		byName[typ.Name] = typ
	}

	plain := byName["plain"]
	assert.Equal(t, "parent hooks", prompt(t, plain), "no scripts of its own: the parent's hooks")
	assert.Equal(t, []string{"parent_tool"}, scriptToolNames(plain))

	hooked := byName["hooked"]
	assert.Equal(t, "hooked hooks", prompt(t, hooked), "its own script replaces the parent's hooks")
	assert.Equal(t, []string{"parent_tool"}, scriptToolNames(hooked), "and keeps the parent's script tools")
	assert.Contains(t, hooked.Tools, "parent_tool")

	tooled := byName["tooled"]
	assert.Equal(t, "parent hooks", prompt(t, tooled), "its own script tools keep the parent's hooks")
	assert.Equal(t, []string{"tooled_tool"}, scriptToolNames(tooled), "and replace the parent's script tools")
	assert.Contains(t, tooled.Tools, "tooled_tool")
	assert.NotContains(t, tooled.Tools, "parent_tool", "a tool the type no longer has is not listed")

	for _, typ := range types {
		for _, name := range typ.Tools {
			_, scripted := typ.Hooks.Tool(name)
			_, err := reg.Tool(name)
			assert.True(t, scripted || err == nil, "%s lists %s, which it has", typ.Name, name)
		}
	}
}
