package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// exampleRepo makes a repository holding the shop sources and the two example
// definitions: a YAML type in .troupe/agents and a Claude Code type in
// .claude/agents.
func exampleRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(shop)))
	for src, dst := range map[string]string{
		"todo-finder.yaml":   ".troupe/agents/todo-finder.yaml",
		"security-review.md": ".claude/agents/security-review.md",
	} {
		data, err := os.ReadFile(filepath.Join("..", "..", "examples", "agents", src))
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, dst)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, dst), data, 0o644))
	}
	return dir
}

func TestFileTypesAreListedAndRun(t *testing.T) {
	repo := exampleRepo(t)
	o := troupe(t, "types", "list", "--repo", repo)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Regexp(t, `(?m)^todo-finder\s+\S*\.troupe/agents/todo-finder\.yaml`, o.stdout)
	assert.Regexp(t, `(?m)^security-review\s+\S*\.claude/agents/security-review\.md`, o.stdout)
	assert.Regexp(t, `(?m)^explore\s+builtin`, o.stdout)

	o = troupe(t, "types", "show", "security-review", "--repo", repo)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stdout, "tools:       read, grep, glob", "Claude's Read, Grep, Glob map onto troupe's tools")

	o = troupe(t, "run", "todo-finder", "--repo", repo, "--json", "--progress", "none", "where is the discount applied?")
	require.Equal(t, 0, o.code, o.stderr)
	var res jsonResult
	require.NoError(t, json.Unmarshal([]byte(o.stdout), &res))
	assert.Equal(t, "todo-finder", res.Type)
	assert.Equal(t, "completed", res.State)
	require.NotEmpty(t, res.Data.Findings, "todo-finder extends explore and keeps its findings")
	assert.Equal(t, "cart/cart.go", res.Data.Findings[0].Path)

	o = troupe(t, "run", "security-review", "--repo", repo, "check the payment code")
	assert.Equal(t, 2, o.code, "a Claude type needs a language model")
	assert.Contains(t, o.stderr, "needs a language model")
}

func TestProjectTypeShadowsBuiltin(t *testing.T) {
	repo := t.TempDir()
	dir := filepath.Join(repo, ".troupe", "agents")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "explore.yaml"), []byte("name: explore\ndescription: my own explore\nextends: explore\n"), 0o644))
	// Untrusted, the project's explore hides nothing, and says why.
	o := troupe(t, "types", "list", "--repo", repo)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Regexp(t, `(?m)^explore\s+builtin\s`, o.stdout)
	assert.Regexp(t, `(?m)^  explore\s+\S*explore\.yaml\s+it hides the builtin type explore`, o.stdout)
	assert.Contains(t, o.stderr, "1 type hiding another")

	trustRepo(t, repo)
	o = troupe(t, "types", "list", "--repo", repo)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Regexp(t, `(?m)^explore\s+\S*explore\.yaml\s+builtin\s+my own explore`, o.stdout)
	assert.NotContains(t, o.stdout, "Not loaded")
}

func TestBrokenDefinitionIsReportedNotFatal(t *testing.T) {
	repo := t.TempDir()
	dir := filepath.Join(repo, ".troupe", "agents")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "typo.yaml"), []byte("name: typo\ndescripton: oops\n"), 0o644))
	o := troupe(t, "types", "list", "--repo", repo)
	require.Equal(t, 0, o.code)
	assert.Contains(t, o.stderr, "typo.yaml:2:1:")
	assert.Contains(t, o.stdout, "explore", "the other types still load")
}

func TestTypesValidate(t *testing.T) {
	examples := filepath.Join("..", "..", "examples", "agents")
	o := troupe(t, "types", "validate", examples)
	assert.Equal(t, 0, o.code, o.stdout+o.stderr)
	assert.Contains(t, o.stderr, "5 files, 3 types, 0 errors, 2 warnings", "nobody trusted the two scripted ones: they are checked, not compiled")
	assert.Contains(t, o.stdout, "verdict.yaml:9:1: warning: the scripts were checked but not compiled")

	// The user's own definitions' scripts compile.
	own := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "troupe", "agents")
	require.NoError(t, os.CopyFS(own, os.DirFS(examples)))
	o = troupe(t, "types", "validate", own)
	assert.Equal(t, 0, o.code, o.stdout+o.stderr)
	assert.Contains(t, o.stderr, "5 files, 5 types, 0 errors, 0 warnings")

	bad := filepath.Join("..", "..", "testdata", "agents", "bad")
	o = troupe(t, "types", "validate", bad)
	assert.Equal(t, 1, o.code)
	line := regexp.MustCompile(`^[^:]+\.(yaml|md):\d+:\d+: `)
	files := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(o.stdout), "\n") {
		if line.MatchString(l) {
			files[strings.SplitN(l, ":", 2)[0]] = true
		}
	}
	assert.GreaterOrEqual(t, len(files), 8, "problems in many files are reported at once, each as FILE:LINE:COL: message:\n%s", o.stdout)
	assert.Contains(t, o.stdout, "typo.yaml")

	o = troupe(t, "types", "validate", "/does/not/exist.yaml")
	assert.Equal(t, 2, o.code)
}
