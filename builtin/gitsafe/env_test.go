package gitsafe

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Keys that read-only commands do not reach today are neutralised all the
// same: each one the repository sets (directly or through an include)
// gets an override in git's environment.
func TestEnvOverridesEveryProgramKey(t *testing.T) {
	bin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	inc := t.TempDir() + "/inc.cfg"
	require.NoError(t, os.WriteFile(inc, []byte("[filter \"Inc\"]\n\tsmudge = evil\n"), 0o644))
	gitc := func(args ...string) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
	}
	gitc("init", "-q")
	want := map[string]string{
		"filter.Evil.clean": "", "filter.Evil.smudge": "", "filter.Evil.process": "", "filter.Evil.required": "false",
		"filter.Inc.smudge": "", // from the include
		"diff.Drv.command":  "", "diff.Drv.textconv": "", "diff.external": "",
		"merge.Drv.driver": "", "mergetool.T.cmd": "", "difftool.T.cmd": "",
		"credential.helper": "", "credential.https://example.com.helper": "",
		"gpg.program": "", "gpg.ssh.program": "", "gpg.x509.program": "",
		"protocol.ext.allow": "never", "protocol.allow": "never",
		"remote.origin.uploadpack": "", "remote.origin.receivepack": "",
		"pager.log":      "false",
		"core.fsmonitor": "false", "core.hooksPath": os.DevNull, "core.pager": "cat",
		"core.sshCommand": "", "core.gitProxy": "", "core.askPass": "", "core.editor": "", "sequence.editor": "",
		"core.attributesFile": os.DevNull, "core.excludesFile": "", "core.alternateRefsCommand": "",
		"uploadpack.packObjectsHook": "", "blame.ignoreRevsFile": "", "mailmap.file": "",
	}
	for key := range want {
		if key != "filter.Inc.smudge" {
			gitc("config", key, "evil")
		}
	}
	gitc("config", "include.path", inc)

	g, err := New(context.Background(), dir, Options{})
	require.NoError(t, err)
	env := g.Env()
	got := map[string]string{}
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	for k, v := range vars {
		if n, ok := strings.CutPrefix(k, "GIT_CONFIG_KEY_"); ok {
			got[strings.ToLower(v)] = vars["GIT_CONFIG_VALUE_"+n]
		}
	}
	for key, value := range want {
		v, ok := got[strings.ToLower(key)]
		if assert.True(t, ok, "no override for %s", key) {
			assert.Equal(t, value, v, key)
		}
	}
	assert.Equal(t, dir, vars["GIT_WORK_TREE"])
	// The configuration was listed, and the call runs, in the repository
	// the check resolved: git looks for none itself.
	real, err := filepath.EvalSymlinks(dir)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(real, ".git"), vars["GIT_DIR"])
	for _, k := range []string{"GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_INDEX_FILE"} {
		assert.NotContains(t, vars, k)
	}
}

func TestNeutralValue(t *testing.T) {
	tests := []struct {
		key, value string
		ok         bool
	}{
		{"filter.a=b.c.clean", "", true},
		{"filter.x.y.process", "", true},
		{"diff.drv.textconv", "", true},
		{"pager.log", "false", true},
		{"protocol.file.allow", "never", true},
		{"core.bare", "", false},
		{"user.name", "", false},
		{"include.path", "", false},
		{"filter", "", false},
	}
	for _, tt := range tests {
		v, ok := neutralValue(tt.key)
		assert.Equal(t, tt.ok, ok, tt.key)
		assert.Equal(t, tt.value, v, tt.key)
	}
}
