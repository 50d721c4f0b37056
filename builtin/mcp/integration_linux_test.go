//go:build integration

package mcp_test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
)

// Killing the process that owns a pool with SIGKILL, as troupe may be,
// leaves no server behind: the real filesystem server (node) is killed
// by its keeper, which sees its owner die. The server is stopped first,
// so that it cannot end on its own when its input closes, as a busy or
// hung one would not: only being killed ends it.
func TestIntegrationKillingTheOwnerLeavesNoServerProcess(t *testing.T) {
	bin := serverBin(t, "mcp-server-filesystem")
	entry, err := json.Marshal(agenttypes.MCPServer{Name: "fs", Command: bin, Args: []string{t.TempDir()}})
	require.NoError(t, err)
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	require.NoError(t, err)
	defer stderr.Close()
	owner := exec.Command(os.Args[0], "-test.run=^$")
	owner.Env = append(os.Environ(), ownerEnv+"="+pidsFile(t), ownerEntryEnv+"="+string(entry), "GORACE=atexit_sleep_ms=0")
	owner.Stderr = stderr
	out, err := owner.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, owner.Start())
	waited := false
	t.Cleanup(func() {
		if !waited {
			_ = owner.Process.Kill()
			_ = owner.Wait()
		}
	})

	said := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		said <- strings.TrimSpace(line)
	}()
	select {
	case line := <-said:
		msg, _ := os.ReadFile(stderr.Name())
		require.Equal(t, "described", line, "the owner did not describe the server: %s", msg)
	case <-time.After(time.Minute):
		t.Fatal("the owner did not describe the server within a minute")
	}
	tree := descendants(owner.Process.Pid)
	server := 0
	for _, pid := range tree {
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) }) // a failing test leaves nothing behind either
		if runs(pid, "node", bin) {
			server = pid
		}
	}
	require.NotZero(t, server, "no process of the owner's tree (%v) is node running %s", tree, bin)
	require.NoError(t, syscall.Kill(server, syscall.SIGSTOP))

	require.NoError(t, owner.Process.Signal(syscall.SIGKILL))
	_ = owner.Wait()
	waited = true
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range tree {
		for alive(pid) {
			require.True(t, time.Now().Before(deadline), "process %d of the owner's tree (the server is %d) outlived it", pid, server)
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// descendants are the processes below pid, read from /proc.
func descendants(pid int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(data)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(f[1]); err == nil {
			children[ppid] = append(children[ppid], p)
		}
	}
	var out []int
	for next := children[pid]; len(next) > 0; {
		p := next[0]
		next = append(next[1:], children[p]...)
		out = append(out, p)
	}
	return out
}

// runs reports whether pid runs program (its first word, a path or a
// name) with script among its arguments.
func runs(pid int, program, script string) bool {
	data, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	words := strings.Split(string(data), "\x00")
	return filepath.Base(words[0]) == program && slices.Contains(words[1:], script)
}
