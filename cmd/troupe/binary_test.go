package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

// troupeBinary builds the command once for the package, for the tests
// that need it as a real process, and returns its path.
func troupeBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	binaryOnce.Do(func() {
		pluginsMu.Lock()
		defer pluginsMu.Unlock()
		if pluginTmp == "" {
			if pluginTmp, binaryErr = os.MkdirTemp("", "troupe-cmd-plugin"); binaryErr != nil {
				return
			}
		}
		binaryPath = filepath.Join(pluginTmp, "troupe")
		out, err := goCommand("build", "-o", binaryPath, ".").CombinedOutput()
		if err != nil {
			binaryErr = fmt.Errorf("building troupe: %v\n%s", err, out)
		}
	})
	require.NoError(t, binaryErr)
	return binaryPath
}

// procStat is what /proc/PID/stat says of a process.
type procStat struct {
	state byte
	ppid  int
}

// readProcStat reads /proc/PID/stat: "pid (comm) state ppid ...", the
// fields after the last ')', as comm may hold anything.
func readProcStat(pid int) (procStat, bool) {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return procStat{}, false
	}
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 2 || len(f[0]) != 1 {
		return procStat{}, false
	}
	ppid, err := strconv.Atoi(f[1])
	return procStat{state: f[0][0], ppid: ppid}, err == nil
}

// processAlive reports whether pid is a process that has not exited.
func processAlive(pid int) bool {
	st, ok := readProcStat(pid)
	return ok && st.state != 'Z'
}

// What a plugin starts dies with troupe, even when troupe is killed with
// SIGKILL and can do nothing about it: the plugin's keeper sees troupe
// die and kills the plugin's whole tree.
func TestAPluginsProcessesDieWithTroupeKilledBySIGKILL(t *testing.T) {
	bin := troupeBinary(t)
	isolate(t)
	pidsFile := filepath.Join(t.TempDir(), "pids")
	cmd := exec.Command(bin, "run", "spawner", "--repo", shop, "--model", "offline", "--progress", "none", pidsFile)
	// Killed, troupe cannot remove the directory of its plugin's socket;
	// the plugin's keeper does. It goes in a temporary directory of the
	// test's (not t.TempDir(), whose path is too long for a socket's
	// below it).
	tmp, err := os.MkdirTemp("", "t")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	cmd.Env = append(os.Environ(), "TROUPE_PLUGIN_PATH="+testPluginDir(t), "TROUPE_RUNS_DIR="+filepath.Join(t.TempDir(), "runs"), "TMPDIR="+tmp)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	var pids []int
	require.Eventually(t, func() bool {
		data, _ := os.ReadFile(pidsFile)
		pids = pids[:0]
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
		return len(pids) == 2
	}, 30*time.Second, 10*time.Millisecond, "the plugin's loop did not start its process")
	for _, pid := range pids {
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		require.True(t, processAlive(pid))
	}

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	for i, what := range []string{"the plugin", "the process the plugin started"} {
		assert.Eventually(t, func() bool { return !processAlive(pids[i]) }, 10*time.Second, 10*time.Millisecond, "%s outlived troupe", what)
	}
	assert.Eventually(t, func() bool {
		left, err := os.ReadDir(tmp)
		return err == nil && len(left) == 0
	}, 10*time.Second, 10*time.Millisecond, "the plugin's socket directory outlived troupe")
}
