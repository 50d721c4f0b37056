package script

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/sdk/wire"
)

// pids are the script host processes r runs.
func pids(r *ChildRunner) []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int
	for pr := range r.all {
		out = append(out, pr.cmd.Process.Pid)
	}
	return out
}

// The script host is started as a plugin (go-plugin's handshake is in its
// environment) and inherits nothing else of this process's environment.
func TestScriptHostIsAPluginWithoutTheHostsEnvironment(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	t.Setenv("TROUPE_TEST_API_KEY", "sk-secret")
	r := NewChildRunner(ChildOptions{})
	defer r.Close()
	require.NoError(t, r.Load(context.Background(), newProgram(KindHooks, goodHooks)))
	ps := pids(r)
	require.Len(t, ps, 1)
	env, err := os.ReadFile("/proc/" + strconv.Itoa(ps[0]) + "/environ")
	require.NoError(t, err)
	assert.NotContains(t, string(env), "sk-secret")
	assert.NotContains(t, string(env), "PATH=")
	assert.Contains(t, string(env), wire.Handshake.MagicCookieKey+"="+wire.Handshake.MagicCookieValue)
	assert.Contains(t, string(env), ChildEnv+"=")
}

const leakHooks = `package hooks

import "troupe"

func Prompt(task troupe.Task) (string, error) {
	if task.Prompt == "leak" {
		go func() { select {} }()
	}
	return "fine: " + task.Prompt, nil
}
`

// Good calls keep their process however many goroutines the plugin
// protocol runs beside them; a call that leaves one goroutine behind
// fails, and its process is replaced.
func TestOnlyAScriptsGoroutinesRetireItsProcess(t *testing.T) {
	h := New(Options{CallTimeout: 5 * time.Second})
	defer h.Close()
	hooks := compileHooks(t, h, leakHooks)
	ctx := agenttypes.WithEnv(context.Background(), &agenttypes.Env{Dir: t.TempDir(), Note: func(string) {}})
	r := h.child.(*ChildRunner)
	var first []int
	for i := range 50 {
		out, err := hooks.Prompt(ctx, agenttypes.ScriptTask{Prompt: strconv.Itoa(i)})
		require.NoError(t, err)
		require.Equal(t, "fine: "+strconv.Itoa(i), out)
		if i == 0 {
			first = pids(r)
		}
	}
	assert.Equal(t, first, pids(r), "one process served every call")

	_, err := hooks.Prompt(ctx, agenttypes.ScriptTask{Prompt: "leak"})
	require.ErrorIs(t, err, agenttypes.ErrScript)
	assert.Contains(t, err.Error(), "left 1 goroutines running after Prompt returned")
	assert.Empty(t, pids(r), "the process was retired")
	out, err := hooks.Prompt(ctx, agenttypes.ScriptTask{Prompt: "after"})
	require.NoError(t, err)
	assert.Equal(t, "fine: after", out)
}

// A script host that dies of a fatal error of the runtime, which it
// writes on its standard error, fails the call with that error, as a
// script error and not as a plugin's exit.
//
// The per-call limit is long: recursing to the stack's limit under the race
// detector on a loaded machine can take seconds, and must not be taken
// for a loop.
func TestAScriptHostsDeathIsAScriptError(t *testing.T) {
	h := New(Options{CallTimeout: time.Minute})
	defer h.Close()
	hooks := compileHooks(t, h, badHooks)
	ctx := agenttypes.WithEnv(context.Background(), &agenttypes.Env{Dir: t.TempDir(), Note: func(string) {}})
	_, err := hooks.Prompt(ctx, agenttypes.ScriptTask{Prompt: "recurse"})
	require.ErrorIs(t, err, agenttypes.ErrScript)
	assert.NotErrorIs(t, err, agenttypes.ErrPluginExited)
	assert.True(t, strings.Contains(err.Error(), "overflowed its stack"), err.Error())
}

// lanes says, for each script host process r runs, whether its calls
// take the lane.
func lanes(r *ChildRunner) []bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []bool
	for pr := range r.all {
		out = append(out, pr.lane != nil)
	}
	return out
}

// A script host takes its calls on the lane; one that does not serve it
// (a script host of an older program, which leaves the lane's descriptor
// unused) gets them over gRPC, and answers the same.
func TestScriptCallsTakeTheLaneWhenTheScriptHostServesIt(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("starts the script host through sh")
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	older := func() (*exec.Cmd, error) {
		return exec.Command("/bin/sh", "-c", `unset `+wire.EnvLaneFD+`; exec "$0"`, exe), nil
	}
	for _, tc := range []struct {
		name string
		opts ChildOptions
		lane bool
	}{{"default", ChildOptions{}, true}, {"older", ChildOptions{Command: older}, false}} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewChildRunner(tc.opts)
			defer r.Close()
			p := newProgram(KindHooks, goodHooks)
			require.NoError(t, r.Load(context.Background(), p))
			rep, err := r.Call(context.Background(), p, &Call{Fn: "Prompt", Task: &Task{Prompt: "abc"}})
			require.NoError(t, err)
			assert.Equal(t, "ABC", rep.Text)
			assert.Equal(t, []bool{tc.lane}, lanes(r))
		})
	}
}

// shortTempDir is a temporary directory for the test, removed after it:
// not t.TempDir(), whose path is too long for a socket's below it.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "t")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// sockets lists the Unix sockets under dir.
func sockets(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type()&fs.ModeSocket != 0 {
			out = append(out, path)
		}
		return err
	})
	require.NoError(t, err)
	return out
}

// A script host listens in a directory of its own under the temporary
// directory, and nothing of it is left there once it has ended, even
// when it was killed: go-plugin's own choice, a socket in the temporary
// directory itself, stays behind a killed process, one more with every
// script host a run kills.
func TestAScriptHostLeavesNothingInTheTemporaryDirectory(t *testing.T) {
	tmp := shortTempDir(t)
	t.Setenv("TMPDIR", tmp)
	r := NewChildRunner(ChildOptions{})
	defer r.Close()
	require.NoError(t, r.Load(context.Background(), newProgram(KindHooks, goodHooks)))
	socks := sockets(t, tmp)
	require.Len(t, socks, 1, "the script host's socket is under TMPDIR")
	assert.NotEqual(t, tmp, filepath.Dir(socks[0]), "in a directory of its own")

	ps := pids(r)
	require.Len(t, ps, 1)
	p, err := os.FindProcess(ps[0])
	require.NoError(t, err)
	require.NoError(t, p.Kill())
	// The next call finds the host dead and starts another.
	require.Eventually(t, func() bool {
		return r.Load(context.Background(), newProgram(KindHooks, goodHooks)) == nil && !slices.Equal(pids(r), ps)
	}, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, r.Close())
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, left, "what the killed and the stopped script hosts left")
}

// A relative TMPDIR is the script host's temporary directory all the
// same: the host starts in the directory made for it, and a TMPDIR
// relative to where troupe runs would name nothing from there.
func TestAScriptHostStartsUnderARelativeTMPDIR(t *testing.T) {
	tmp := shortTempDir(t)
	require.NoError(t, os.Mkdir(filepath.Join(tmp, "rel"), 0o700))
	t.Chdir(tmp)
	t.Setenv("TMPDIR", "rel")
	r := NewChildRunner(ChildOptions{})
	defer r.Close()
	require.NoError(t, r.Load(context.Background(), newProgram(KindHooks, goodHooks)))
	assert.Len(t, sockets(t, filepath.Join(tmp, "rel")), 1, "the script host's socket is under TMPDIR")
}
