package plugins_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/troupe-dev/troupe/builtin/process"
	"github.com/troupe-dev/troupe/builtin/script"
	"github.com/troupe-dev/troupe/plugins"
)

// testPlugin is the test plugin's binary, built once for the package.
var testPlugin string

func TestMain(m *testing.M) {
	// Plugins run under keepers: this test binary, re-executed.
	process.ServeIfKeeper()
	// Keepers are this race-built binary: none sleeps a second as it
	// exits, which every Close would wait for.
	os.Setenv("GORACE", "atexit_sleep_ms=0")
	// Script hosts, for BenchmarkBoundary: this test binary, re-executed.
	script.ServeIfChild()
	if os.Getenv(hostHelperEnv) != "" {
		hostHelper()
		return
	}
	dir, err := os.MkdirTemp("", "troupe-plugins-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testPlugin = filepath.Join(dir, plugins.Prefix+"test")
	out, err := exec.Command("go", "build", "-o", testPlugin, "./internal/testplugin").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building the test plugin: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// pluginDir returns a directory holding a copy (or a link) of the test
// plugin as troupe-plugin-NAME.
func pluginDir(t testing.TB, name string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Symlink(testPlugin, filepath.Join(dir, plugins.Prefix+name)))
	return dir
}

// copyPlugin copies the test plugin into dir as troupe-plugin-NAME.
func copyPlugin(t testing.TB, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(testPlugin)
	require.NoError(t, err)
	path := filepath.Join(dir, plugins.Prefix+name)
	require.NoError(t, os.WriteFile(path, data, 0o755))
	return path
}

// logBuffer collects the host's logs.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// newHost returns a host over dir, closed when the test ends, and its
// log.
func newHost(t testing.TB, cfg plugins.Config, dirs ...string) (*plugins.Host, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	for _, d := range dirs {
		cfg.Dirs = append(cfg.Dirs, plugins.Dir{Layer: plugins.LayerPath, Path: d})
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	h := plugins.New(cfg)
	t.Cleanup(func() { require.NoError(t, h.Close()) })
	return h, logs
}

// alive reports whether pid is a process that has not exited (a zombie
// has exited).
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !os.IsNotExist(err)
	}
	// pid (comm) STATE ...
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// waitGone waits up to d for pid to exit, on a pidfd, which turns
// readable when the process ends.
func waitGone(pid int, d time.Duration) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return !alive(pid) // ESRCH: gone already
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	deadline := time.Now().Add(d)
	for {
		n, err := unix.Poll(fds, int(time.Until(deadline).Milliseconds()))
		switch {
		case err == unix.EINTR:
			continue
		case err != nil || n == 0:
			return !alive(pid)
		}
		return true
	}
}

// running lists the processes whose binary is path.
func running(path string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		// A plugin runs from a sealed copy of its binary, under the path
		// it was found at as its argv[0].
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		argv0, _, _ := strings.Cut(string(cmdline), "\x00")
		if err == nil && argv0 == path && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// fifo is a FIFO a process writes lines to, for the test to wait on. The
// test holds it open for reading and writing, so that neither end's open
// blocks.
type fifo struct {
	path  string
	f     *os.File
	lines *bufio.Reader
}

// newFIFO makes a FIFO in a directory of the test's own; it is closed
// when the test ends.
func newFIFO(t testing.TB, name string) *fifo {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, syscall.Mkfifo(path, 0o600))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	return &fifo{path: path, f: f, lines: bufio.NewReader(f)}
}

// line returns the next line written to the FIFO, waiting up to d for it.
func (f *fifo) line(d time.Duration) (string, error) {
	if err := f.f.SetReadDeadline(time.Now().Add(d)); err != nil {
		return "", err
	}
	line, err := f.lines.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("nothing written to %s in %s: %w", filepath.Base(f.path), d, err)
	}
	return strings.TrimSuffix(line, "\n"), nil
}

// pid waits up to d for a process ID written to the FIFO.
func (f *fifo) pid(t testing.TB, d time.Duration) int {
	t.Helper()
	line, err := f.line(d)
	require.NoError(t, err)
	pid, err := strconv.Atoi(line)
	require.NoError(t, err)
	return pid
}

func ctxTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
