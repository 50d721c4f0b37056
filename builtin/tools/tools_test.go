package tools_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/tools"
)

// writeTree writes files (slash paths → content) under a new temp dir,
// each with a distinct mtime (later in sorted order is newer), and
// returns the dir.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, name := range names {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(files[name]), 0o644))
		mt := base.Add(time.Duration(i) * time.Minute)
		require.NoError(t, os.Chtimes(p, mt, mt))
	}
	return dir
}

func call(t *testing.T, tool agenttypes.Tool, dir, args string) (string, error) {
	t.Helper()
	return callCtx(context.Background(), tool, dir, args)
}

func callCtx(ctx context.Context, tool agenttypes.Tool, dir, args string) (string, error) {
	ctx = agenttypes.WithEnv(ctx, &agenttypes.Env{Dir: dir})
	return tool.Call(ctx, json.RawMessage(args))
}

func mustCall(t *testing.T, tool agenttypes.Tool, dir, args string) string {
	t.Helper()
	out, err := call(t, tool, dir, args)
	require.NoError(t, err)
	return out
}

func TestReadOnlySpecs(t *testing.T) {
	want := map[string][]string{
		"read":    {"path", "offset", "limit"},
		"grep":    {"pattern", "path", "glob", "ignore_case", "max_results"},
		"symbols": {"query", "path", "kind", "max_results"},
		"glob":    {"pattern", "path"},
		"ls":      {"path"},
		"git":     {"args"},
	}
	all := tools.ReadOnly()
	require.Len(t, all, 6)
	for _, tool := range all {
		spec := tool.Spec()
		t.Run(spec.Name, func(t *testing.T) {
			assert.True(t, spec.ReadOnly)
			assert.ElementsMatch(t, want[spec.Name], checkSpec(t, tool))
		})
	}
}

func TestArgsAreStrict(t *testing.T) {
	dir := writeTree(t, map[string]string{"a.txt": "x\n"})
	tests := []struct {
		tool agenttypes.Tool
		args string
		want string
	}{
		{tools.Read(), `{"path":"a.txt","lines":3}`, `unknown argument "lines"; valid arguments are path, offset, limit`},
		{tools.Grep(), `{"pattern":"x","case":true}`, `valid arguments are pattern, path, glob, ignore_case, max_results`},
		{tools.Glob(), `{"glob":"*"}`, `unknown argument "glob"; valid arguments are pattern, path`},
		{tools.Symbols(), `{"pattern":"x"}`, `unknown argument "pattern"; valid arguments are query, path, kind, max_results`},
		{tools.Symbols(), `{"kind":1}`, `argument "kind" must be a string, not a JSON number`},
		{tools.Ls(), `{"dir":"."}`, `unknown argument "dir"; valid arguments are path`},
		{tools.Git(), `{"cmd":"log"}`, `unknown argument "cmd"; valid arguments are args`},
		{tools.Read(), `{"path":3}`, `argument "path" must be a string, not a JSON number`},
		{tools.Grep(), `{"pattern":"x","max_results":"5"}`, `argument "max_results" must be an integer`},
		{tools.Git(), `{"args":"log"}`, `argument "args" must be an array of strings`},
		{tools.Ls(), `[1]`, `arguments must be a JSON object with fields path`},
		{tools.Ls(), `{} {}`, `unexpected data after the arguments object`},
		{tools.Ls(), `{}}`, `unexpected data after the arguments object`},
		{tools.Read(), `{"path":"a.txt"}]`, `unexpected data after the arguments object`},
		{tools.Read(), `{}`, `missing "path"`},
		{tools.Grep(), `{}`, `missing "pattern"`},
		{tools.Glob(), ``, `missing "pattern"`},
		{tools.Git(), `{"args":[]}`, `missing "args"`},
	}
	for _, tt := range tests {
		t.Run(tt.tool.Spec().Name+" "+tt.args, func(t *testing.T) {
			_, err := call(t, tt.tool, dir, tt.args)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestNeedsDir(t *testing.T) {
	for _, tool := range tools.ReadOnly() {
		_, err := tool.Call(context.Background(), json.RawMessage(`{}`))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "no working directory", tool.Spec().Name)
	}
	_, err := call(t, tools.Ls(), filepath.Join(t.TempDir(), "missing"), `{}`)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not exist")
}

func TestCancelledContext(t *testing.T) {
	dir := writeTree(t, map[string]string{"a.txt": "x\n"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tool := range tools.ReadOnly() {
		_, err := callCtx(ctx, tool, dir, `{"pattern":"x","path":"a.txt","args":["status"]}`)
		require.ErrorIs(t, err, context.Canceled, tool.Spec().Name)
	}
}

// checkSpec checks what every tool's spec must be (a description, stable,
// a strict object schema) and returns the names of its parameters.
func checkSpec(t *testing.T, tool agenttypes.Tool) []string {
	t.Helper()
	spec := tool.Spec()
	assert.NotEmpty(t, spec.Description)
	assert.Equal(t, spec, tool.Spec(), "Spec must be stable")
	var schema struct {
		Type                 string                     `json:"type"`
		Properties           map[string]json.RawMessage `json:"properties"`
		AdditionalProperties *bool                      `json:"additionalProperties"`
	}
	require.NoError(t, json.Unmarshal(spec.Parameters, &schema))
	assert.Equal(t, "object", schema.Type)
	require.NotNil(t, schema.AdditionalProperties)
	assert.False(t, *schema.AdditionalProperties)
	var props []string
	for p := range schema.Properties {
		props = append(props, p)
	}
	return props
}
