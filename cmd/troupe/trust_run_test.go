package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The commands a project's config and definitions let agents run are
// the project's code: untrusted, the config's list is ignored with a
// warning, and `troupe trust` lists every list with what it runs; trusted
// as it is, the config's list applies, until it changes.
func TestAProjectsCommandsNeedTrust(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(shop)))
	config := filepath.Join(dir, ".troupe", "config.yaml")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".troupe", "agents"), 0o755))
	require.NoError(t, os.WriteFile(config, []byte("run:\n  allow: [\"go test\", make]\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".troupe", "agents", "fixer.yaml"),
		[]byte("name: fixer\ndescription: Fixes.\ntools: [read, grep]\nrun:\n  allow: [\"go vet\"]\n"), 0o644))
	runPolicy := func() []string {
		t.Helper()
		p := newApp(io.Discard, io.Discard).project(dir)
		policy := p.runPolicy()
		assert.Equal(t, policy, p.sources().ProjectRun, "the definitions get what the config gives")
		if policy == nil {
			return nil
		}
		return policy.Allow
	}

	o := troupe(t, "types", "list", "--repo", dir)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stderr, config+": run.allow is ignored: the project is not trusted")
	assert.Contains(t, o.stderr, "what would run of it is left out: 2 lists of commands to run")
	assert.Regexp(t, `(?m)^fixer\s`, o.stdout, "a definition naming commands loads untrusted")
	assert.Nil(t, runPolicy())
	o = troupe(t, "types", "show", "fixer", "--repo", dir)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stdout, "runs:        go vet (each for up to 2m0s, without the network)")

	o = troupe(t, "trust", "--repo", dir)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Regexp(t, `(?m)^  run\s+run\.allow\s+\.troupe/config\.yaml\s+runs: go test, make$`, o.stdout)
	assert.Regexp(t, `(?m)^  run\s+fixer\s+\.troupe/agents/fixer\.yaml\s+runs: go vet$`, o.stdout)
	assert.Contains(t, o.stdout, "trusted "+dir+" (2 lists of commands to run)")
	assert.Equal(t, []string{"go test", "make"}, runPolicy())
	o = troupe(t, "types", "list", "--repo", dir)
	require.Equal(t, 0, o.code, o.stderr)
	assert.NotContains(t, o.stderr, "trust")

	require.NoError(t, os.WriteFile(config, []byte("run:\n  allow: [\"go test\", make, rm]\n"), 0o644))
	o = troupe(t, "types", "list", "--repo", dir)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stderr, "changed since you trusted it (run run.allow)")
	assert.Contains(t, o.stderr, config+": run.allow is ignored")
	assert.Nil(t, runPolicy(), "a changed list needs trust again")

	// A section that does not parse is reported, where it is, and left out.
	require.NoError(t, os.WriteFile(config, []byte("run:\n  allow: [\"go test | tee\"]\n"), 0o644))
	o = troupe(t, "types", "list", "--repo", dir)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stderr, config+`:2:11: run.allow: "go test | tee": command syntax`)
	assert.Contains(t, o.stderr, "(the project's run section is left out)")
	assert.Nil(t, runPolicy())
}
