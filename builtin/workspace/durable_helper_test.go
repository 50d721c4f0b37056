package workspace_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/workspace"
)

// The test binary run as another worker on the same state directory: it
// reopens a durable workspace by its handle and acts on it.
const (
	durableHelperEnv = "WORKSPACE_TEST_DURABLE" // the action
	handleEnv        = "WORKSPACE_TEST_HANDLE"
	tagEnv           = "WORKSPACE_TEST_TAG"
	roundsEnv        = "WORKSPACE_TEST_ROUNDS"
	setupEnv         = "WORKSPACE_TEST_SETUP" // a setup command of the "open" action
	cacheEnv         = "WORKSPACE_TEST_CACHE" // the provider's cache directory, which commands see
)

// setupPolicy lets the "open" action's setup command run.
var setupPolicy = agenttypes.RunPolicy{Allow: []string{"cat"}}

// helperBound bounds how long a helper process may take.
const helperBound = 2 * time.Minute

// runDurableHelper runs the action durableHelperEnv names and exits: 0
// when it went, 2 with the error on standard error when not.
func runDurableHelper() {
	p, err := workspace.New(workspace.Config{StateDir: os.Getenv(stateEnv), ExcludesFile: os.DevNull,
		AllowRun: func(string) error { return nil }, CacheDir: os.Getenv(cacheEnv)})
	if err == nil {
		if action := os.Getenv(durableHelperEnv); action == "open" {
			err = openAction(context.Background(), p)
		} else {
			err = durableAction(context.Background(), p, action)
		}
		p.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(0)
}

func durableAction(ctx context.Context, p *workspace.Provider, action string) error {
	w, err := p.Reopen(ctx, os.Getenv(handleEnv))
	if err != nil {
		return err
	}
	switch action {
	case "edit": // write a file, and commit it with a child's changes merged
		if err := os.WriteFile(filepath.Join(w.Dir(), "helper.txt"), []byte("from the helper\n"), 0o644); err != nil {
			return err
		}
		return childRound(ctx, p, w, "helper")
	case "child": // open a durable child, say its handle
		child, err := p.Open(ctx, agenttypes.WorkspaceRequest{Run: "run-1", Agent: "child", Dir: w.Dir(), Parent: w, Durable: true})
		if err != nil {
			return err
		}
		fmt.Println(child.(agenttypes.DurableWorkspace).Handle())
		return nil
	case "rounds": // once told to go, write, start a child and merge it, round after round
		fmt.Println("ready")
		if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
			return fmt.Errorf("waiting to be told to go: %w", err)
		}
		n, _ := strconv.Atoi(os.Getenv(roundsEnv))
		for i := range n {
			tag := fmt.Sprintf("%s-%d", os.Getenv(tagEnv), i)
			if err := os.WriteFile(filepath.Join(w.Dir(), tag+".txt"), []byte(tag+"\n"), 0o644); err != nil {
				return err
			}
			if err := childRound(ctx, p, w, tag); err != nil {
				return fmt.Errorf("round %d: %w", i, err)
			}
		}
		return nil
	}
	return fmt.Errorf("no helper action %q", action)
}

// openAction says it is ready and, once told to go, opens run-1's agent
// durable on the repository, with the setup command given if any, and
// says its handle.
func openAction(ctx context.Context, p *workspace.Provider) error {
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return fmt.Errorf("waiting to be told to go: %w", err)
	}
	var setup []string
	if s := os.Getenv(setupEnv); s != "" {
		setup = []string{s}
	}
	w, err := p.Open(ctx, agenttypes.WorkspaceRequest{Run: "run-1", Agent: "agent", Dir: os.Getenv(repoEnv),
		Durable: true, Policy: setupPolicy, Setup: setup})
	if err != nil {
		return err
	}
	fmt.Println(w.(agenttypes.DurableWorkspace).Handle())
	return nil
}

// childRound starts a child of w, which writes c-TAG.txt, and merges its
// changes back into w.
func childRound(ctx context.Context, p *workspace.Provider, w agenttypes.Workspace, tag string) error {
	child, err := p.Open(ctx, agenttypes.WorkspaceRequest{Run: "run-1", Agent: "c-" + tag, Dir: w.Dir(), Parent: w})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(child.Dir(), "c-"+tag+".txt"), []byte("child "+tag+"\n"), 0o644); err != nil {
		return err
	}
	ch, err := child.Close(ctx)
	if err != nil {
		return err
	}
	res, err := w.Merge(ctx, ch)
	if err == nil && len(res.Conflicts) > 0 {
		err = fmt.Errorf("the merge of %s conflicts: %v", ch.Branch, res.Conflicts)
	}
	return err
}

// helper is a running helper process: in a process group of its own,
// killed whole when the test ends.
type helper struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr strings.Builder
	done   chan struct{} // closed once it exited; err is then how
	err    error
}

func startHelper(t *testing.T, state, action, handle string, env ...string) *helper {
	t.Helper()
	h := &helper{cmd: exec.Command(os.Args[0], "-test.run=^$"), done: make(chan struct{})}
	h.cmd.Env = append(os.Environ(), append([]string{durableHelperEnv + "=" + action, stateEnv + "=" + state,
		handleEnv + "=" + handle, "GORACE=atexit_sleep_ms=0"}, env...)...)
	h.cmd.Stderr = &h.stderr
	h.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r, w, err := os.Pipe()
	require.NoError(t, err)
	h.cmd.Stdout = w
	h.stdout = bufio.NewReader(r)
	h.stdin, err = h.cmd.StdinPipe()
	require.NoError(t, err)
	err = h.cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		require.NoError(t, err)
	}
	go func() {
		h.err = h.cmd.Wait()
		close(h.done)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
		<-h.done
		r.Close()
	})
	return h
}

// tell writes a line to the helper's standard input.
func (h *helper) tell(t *testing.T, line string) {
	t.Helper()
	_, err := io.WriteString(h.stdin, line+"\n")
	require.NoError(t, err)
}

// line reads a line the helper printed.
func (h *helper) line(t *testing.T) string {
	t.Helper()
	s, err := h.stdout.ReadString('\n')
	if err != nil {
		h.wait(t)
		t.Fatalf("the helper said nothing and went: %v", err)
	}
	return strings.TrimSpace(s)
}

// wait waits for the helper to exit, within helperBound, and fails the
// test with what it said unless it went.
func (h *helper) wait(t *testing.T) {
	t.Helper()
	select {
	case <-h.done:
	case <-time.After(helperBound):
		t.Fatalf("the helper did not end within %s", helperBound)
	}
	require.NoError(t, h.err, "the helper failed: %s", h.stderr.String())
}
