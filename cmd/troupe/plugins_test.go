package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	pluginsMu  sync.Mutex
	pluginBins = map[string]string{} // package → binary
	pluginTmp  string
)

// testPluginDir returns a fresh directory holding the plugins package's
// test plugin as troupe-plugin-test; the binary is built once.
func testPluginDir(t *testing.T) string {
	return pluginDirOf(t, "github.com/troupe-dev/troupe/plugins/internal/testplugin", "test")
}

// pluginDirOf returns a fresh directory holding the plugin built from pkg
// as troupe-plugin-NAME; each package is built once.
func pluginDirOf(t *testing.T, pkg, name string) string {
	t.Helper()
	pluginsMu.Lock()
	bin, ok := pluginBins[pkg]
	if !ok {
		var err error
		if pluginTmp == "" {
			pluginTmp, err = os.MkdirTemp("", "troupe-cmd-plugin")
		}
		if err == nil {
			bin = filepath.Join(pluginTmp, "troupe-plugin-"+name)
			var out []byte
			if out, err = goCommand("build", "-o", bin, pkg).CombinedOutput(); err != nil {
				err = fmt.Errorf("building plugin %s: %v\n%s", pkg, err, out)
			}
		}
		if err != nil {
			pluginsMu.Unlock()
			require.NoError(t, err)
		}
		pluginBins[pkg] = bin
	}
	pluginsMu.Unlock()
	dir := t.TempDir()
	require.NoError(t, os.Symlink(bin, filepath.Join(dir, "troupe-plugin-"+name)))
	return dir
}

func removeTestPlugin() {
	if pluginTmp != "" {
		os.RemoveAll(pluginTmp)
	}
}

func TestPluginsListAndLock(t *testing.T) {
	project := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(project, ".git"), 0o755))
	t.Setenv("TROUPE_PLUGIN_PATH", testPluginDir(t))

	o := troupe(t, "plugins", "list", "--repo", project, "--json")
	require.Equal(t, 0, o.code, o.stderr)
	var infos []struct {
		Name, Version, Status, Path, SHA256 string
		Types, Tools                        []string
	}
	require.NoError(t, json.Unmarshal([]byte(o.stdout), &infos), o.stdout)
	require.Len(t, infos, 1)
	assert.Equal(t, "test", infos[0].Name)
	assert.Equal(t, "1.2.3", infos[0].Version)
	assert.Equal(t, "unlocked", infos[0].Status)
	assert.Contains(t, infos[0].Types, "looper")
	assert.Contains(t, infos[0].Tools, "shout")

	o = troupe(t, "plugins", "lock", "--repo", project)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stdout, "locked 1 plugin(s) in "+filepath.Join(".troupe", "plugins.lock"))
	require.FileExists(t, filepath.Join(project, ".troupe", "plugins.lock"))

	o = troupe(t, "plugins", "list", "--repo", project)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stdout, "locked")
	assert.Contains(t, o.stdout, "types: looper")

	o = troupe(t, "types", "list", "--repo", project)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stdout, "looper")

	// A lock that does not list the plugin refuses it, saying how to fix it.
	require.NoError(t, os.WriteFile(filepath.Join(project, ".troupe", "plugins.lock"), []byte(`{"version":1,"plugins":{}}`), 0o644))
	o = troupe(t, "types", "list", "--repo", project)
	require.Equal(t, 0, o.code, o.stderr)
	assert.NotContains(t, o.stdout, "looper")
	assert.Contains(t, o.stderr, "plugin test")
	assert.Contains(t, o.stderr, "troupe plugins lock")
}

// shoutServer is a loopback OpenAI-compatible server: the first request
// gets a call of the shout tool, the next the final answer.
func shoutServer(t *testing.T) *httptest.Server {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
		if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		msg := `{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"shout","arguments":"{\"text\":\"yo\"}"}}]}`
		finish := "tool_calls"
		if n.Add(1) > 1 {
			msg, finish = `{"role":"assistant","content":"the plugin loop is done"}`, "stop"
		}
		fmt.Fprintf(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":%s,"finish_reason":%q}],"usage":{"prompt_tokens":20,"completion_tokens":4,"total_tokens":24}}`, msg, finish)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestRunAPluginTypeWithItsOwnLoop(t *testing.T) {
	srv := shoutServer(t)
	o := runWith(t, map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1", "TROUPE_PLUGIN_PATH": testPluginDir(t)}, "",
		"run", "shouter", "--repo", shop, "--model", "openai:some-model", "--json", "--progress", "none", "shout something")
	require.Equal(t, 0, o.code, o.stderr)
	var res jsonResult
	require.NoError(t, json.Unmarshal([]byte(o.stdout), &res), o.stdout)
	assert.Equal(t, "completed", res.State)
	assert.Equal(t, "the plugin loop is done", res.Output)
	assert.Equal(t, 1, res.ToolCalls)
	assert.Equal(t, 2, res.Turns)
	assert.Equal(t, 40, res.Usage.InputTokens)
	assert.Equal(t, 8, res.Usage.OutputTokens)
}

// The example plugin, built as its README says, runs its own agent loop
// through the command line: the model is a loopback server, and the
// plugin's loop lists the repository's TODO comments with its own tool
// before the model is asked.
func TestRunTheExamplePluginsType(t *testing.T) {
	repo := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(repo, ".git"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(repo, "main.go"), []byte("package main\n\n// TODO: handle the error from Close\nfunc main() {}\n"), 0o644))
	srv := newChatServer(t, "main.go:3 first: an ignored error loses data.")
	o := runWith(t, map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1", "TROUPE_PLUGIN_PATH": pluginDirOf(t, "github.com/troupe-dev/troupe/examples/plugins/todos", "todos")}, "",
		"run", "todo-triage", "--repo", repo, "--model", "openai:some-model", "--json", "--progress", "none", "which TODOs first?")
	require.Equal(t, 0, o.code, o.stderr)
	var res jsonResult
	require.NoError(t, json.Unmarshal([]byte(o.stdout), &res), o.stdout)
	assert.Equal(t, "completed", res.State)
	assert.Equal(t, "todo-triage", res.Type)
	assert.Equal(t, "main.go:3 first: an ignored error loses data.", res.Output)
	assert.Equal(t, 1, res.ToolCalls, "the loop's todos call goes through the host")
	assert.Equal(t, 1, res.Turns)
	assert.Equal(t, 10, res.Usage.InputTokens, "the server's count, counted by the host")
	assert.Equal(t, 5, res.Usage.OutputTokens)
	reqs := srv.received()
	require.Len(t, reqs, 1)
	assert.Contains(t, reqs[0], "handle the error from Close", "the model saw what the plugin's tool found")
	transcript, err := os.ReadFile(res.Transcript)
	require.NoError(t, err)
	assert.Contains(t, string(transcript), `"kind":"tool_call"`)
	assert.Contains(t, string(transcript), "listed the TODO comments", "the loop's own event reaches the record")
}
