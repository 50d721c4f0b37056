package plugins_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/plugins"
)

// hostHelperEnv makes the test binary a plugin host that starts the
// plugins in the directory the variable names, prints their PIDs and
// waits to be killed.
const hostHelperEnv = "TROUPE_TEST_PLUGIN_HOST"

func hostHelper() {
	h := plugins.New(plugins.Config{Dirs: []plugins.Dir{{Layer: plugins.LayerPath, Path: os.Getenv(hostHelperEnv)}}, Logger: slog.New(slog.DiscardHandler)})
	reg := agenttypes.NewRegistry()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if problems := h.Load(ctx, reg); len(problems) > 0 {
		fmt.Println("error", problems)
		os.Exit(1)
	}
	// What the plugin itself starts must end with the host too.
	tool, err := reg.Tool("spawn")
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	spawned, err := tool.Call(ctx, json.RawMessage(`{}`))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("pid", h.PID("test"), spawned)
	time.Sleep(time.Minute)
	os.Exit(2)
}

func TestPluginsExitWhenTheirHostIsKilled(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	// Killed, the host cannot remove the directory of its plugin's
	// socket; the plugin's keeper does. It goes in a temporary directory
	// of the test's (not t.TempDir(), whose path is too long for a
	// socket's below it).
	tmp, err := os.MkdirTemp("", "t")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), hostHelperEnv+"="+pluginDir(t, "test"), "TMPDIR="+tmp)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	f := strings.Fields(line)
	require.Len(t, f, 3, "host said %q", line)
	pid, err := strconv.Atoi(f[1])
	require.NoError(t, err, "host said %q", line)
	spawned, err := strconv.Atoi(f[2])
	require.NoError(t, err, "host said %q", line)
	t.Cleanup(func() { _ = syscall.Kill(spawned, syscall.SIGKILL) })
	require.True(t, alive(pid))
	require.True(t, alive(spawned))

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	start := time.Now()
	assert.True(t, waitGone(pid, 5*time.Second), "the plugin outlived its host")
	assert.True(t, waitGone(spawned, 5*time.Second), "a process the plugin started outlived the host")
	t.Logf("the plugin exited %s after its host", time.Since(start).Round(time.Millisecond))
	assert.Eventually(t, func() bool {
		left, err := os.ReadDir(tmp)
		return err == nil && len(left) == 0
	}, 5*time.Second, 10*time.Millisecond, "the plugin's socket directory outlived its host")
}
