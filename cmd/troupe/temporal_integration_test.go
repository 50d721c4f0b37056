//go:build integration

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/builtin/models/providertest"
)

// These tests run troupe on a real Temporal cluster: the Temporal CLI's
// dev server (make integration builds the CLI and names it in
// TROUPE_TEMPORAL_BIN), started here on loopback ports of the test's own;
// `troupe worker` processes with the real troupe-temporal beside troupe;
// and the fake providers the other tests script models with.

const (
	// temporalStartTimeout bounds the dev server's start, up to its
	// namespace answering.
	temporalStartTimeout = time.Minute
	// workerStartTimeout bounds a worker's start, up to its helper's
	// Temporal worker polling.
	workerStartTimeout = time.Minute
	// runTimeout bounds one troupe run.
	runTimeout = 2 * time.Minute
)

// temporalCLI is the Temporal CLI make integration built.
func temporalCLI(tb testing.TB) string {
	tb.Helper()
	bin := os.Getenv("TROUPE_TEMPORAL_BIN")
	if bin == "" {
		tb.Skip("TROUPE_TEMPORAL_BIN is not set: run make integration, which builds the Temporal CLI")
	}
	_, err := os.Stat(bin)
	require.NoError(tb, err, "TROUPE_TEMPORAL_BIN names no Temporal CLI: run make integration, which builds it")
	return bin
}

var (
	realHelperOnce sync.Once
	realHelperBin  string
	realHelperErr  error
)

// troupeBesideHelper returns a troupe binary with the real
// troupe-temporal beside it, in a directory of their own, as make build
// leaves them.
func troupeBesideHelper(t *testing.T) string {
	t.Helper()
	bin := troupeBinary(t)
	realHelperOnce.Do(func() {
		realHelperBin = filepath.Join(filepath.Dir(bin), "real-"+helperName)
		cmd := goCommand("build", "-o", realHelperBin, "./cmd/troupe-temporal")
		cmd.Dir = filepath.Join(repoRoot, "manager", "temporal")
		if out, err := cmd.CombinedOutput(); err != nil {
			realHelperErr = fmt.Errorf("building %s: %v\n%s", helperName, err, out)
		}
	})
	require.NoError(t, realHelperErr)
	// Linked, not symlinked: troupe looks beside the file it runs from.
	dir := t.TempDir()
	for from, to := range map[string]string{bin: "troupe", realHelperBin: helperName} {
		require.NoError(t, linkOrCopy(from, filepath.Join(dir, to)))
	}
	return filepath.Join(dir, "troupe")
}

// linkOrCopy makes to the same file as from: a hard link, else a copy.
func linkOrCopy(from, to string) error {
	if os.Link(from, to) == nil {
		return nil
	}
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// group is a process started as the leader of a process group of its
// own, with its output kept.
type group struct {
	cmd            *exec.Cmd
	stdout, stderr syncBuffer
	exited         chan struct{}
}

// startProcessGroup starts bin with args and env (added to the test's),
// in a process group of its own that is killed, and checked gone, when
// the test ends.
func startProcessGroup(tb testing.TB, env []string, bin string, args ...string) *group {
	tb.Helper()
	g := &group{cmd: exec.Command(bin, args...), exited: make(chan struct{})}
	g.cmd.Env = append(os.Environ(), env...)
	g.cmd.Stdout, g.cmd.Stderr = &g.stdout, &g.stderr
	g.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(tb, g.cmd.Start())
	go func() {
		_ = g.cmd.Wait()
		close(g.exited)
	}()
	tb.Cleanup(func() {
		_ = syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL)
		<-g.exited
		assert.Eventually(tb, func() bool { return groupGone(g.cmd.Process.Pid) }, 10*time.Second, 10*time.Millisecond,
			"a process of %s's group outlived it", filepath.Base(bin))
		if tb.Failed() {
			tb.Logf("%s %s's stderr:\n%s", filepath.Base(bin), strings.Join(args, " "), lastBytes([]byte(g.stderr.String()), 8<<10))
		}
	})
	return g
}

// wait waits for the group's leader to exit, within bound, and returns
// its exit status.
func (g *group) wait(tb testing.TB, bound time.Duration) int {
	tb.Helper()
	select {
	case <-g.exited:
	case <-time.After(bound):
		tb.Fatalf("%s did not exit within %s; stderr:\n%s", g.cmd.Path, bound, g.stderr.String())
	}
	return g.cmd.ProcessState.ExitCode()
}

// interrupt sends SIGINT to the whole group, as a terminal's Ctrl-C does.
func (g *group) interrupt(tb testing.TB) {
	tb.Helper()
	require.NoError(tb, syscall.Kill(-g.cmd.Process.Pid, syscall.SIGINT))
}

// startTemporal starts the dev server on loopback and returns its
// frontend's address once its default namespace answers.
func startTemporal(t *testing.T) string {
	tb := testing.TB(t)
	tb.Helper()
	bin := temporalCLI(tb)
	ports := loopbackPorts(t, 3)
	port := func(i int) string { _, p, _ := net.SplitHostPort(ports[i]); return p }
	dir := tb.TempDir()
	// Nothing of the test's environment but PATH: the CLI writes under
	// its home.
	g := &group{exited: make(chan struct{})}
	g.cmd = exec.Command(bin, "server", "start-dev", "--headless", "--ip", "127.0.0.1",
		"--port", port(0), "--http-port", port(1), "--metrics-port", port(2))
	g.cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH")}
	g.cmd.Dir = dir
	g.cmd.Stdout, g.cmd.Stderr = &g.stdout, &g.stdout
	g.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(tb, g.cmd.Start())
	go func() {
		_ = g.cmd.Wait()
		close(g.exited)
	}()
	tb.Cleanup(func() {
		_ = syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL)
		<-g.exited
		assert.Eventually(tb, func() bool { return groupGone(g.cmd.Process.Pid) }, 10*time.Second, 10*time.Millisecond,
			"a process of the Temporal server's group outlived it")
		if tb.Failed() {
			tb.Logf("the Temporal server's output:\n%s", lastBytes([]byte(g.stdout.String()), 8<<10))
		}
	})
	waitNamespace(tb, g, "http://"+ports[1]+"/api/v1/namespaces/default")
	return ports[0]
}

// waitNamespace polls the server's HTTP API until the namespace answers
// 200, the server exits, or temporalStartTimeout passes.
func waitNamespace(tb testing.TB, g *group, url string) {
	tb.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.After(temporalStartTimeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := client.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		select {
		case <-g.exited:
			tb.Fatalf("the Temporal server exited before it served:\n%s", lastBytes([]byte(g.stdout.String()), 8<<10))
		case <-deadline:
			tb.Fatalf("the Temporal server's namespace did not answer within %s (last: %v)", temporalStartTimeout, err)
		case <-tick.C:
		}
	}
}

// startWorker starts `troupe worker` on repo and returns once its helper's
// Temporal worker has started.
func startWorker(tb testing.TB, bin, addr, repo string, env []string, args ...string) *group {
	tb.Helper()
	w := startProcessGroup(tb, env, bin, append([]string{"worker", "--temporal", addr, "--repo", repo}, args...)...)
	deadline := time.After(workerStartTimeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !strings.Contains(w.stderr.String(), `msg="Started Worker"`) {
		select {
		case <-w.exited:
			tb.Fatalf("the worker exited before it started; its stderr:\n%s", w.stderr.String())
		case <-deadline:
			tb.Fatalf("the worker did not start within %s; its stderr:\n%s", workerStartTimeout, w.stderr.String())
		case <-tick.C:
		}
	}
	return w
}

// runTroupeGroup runs troupe to its end, in a process group of its own.
func runTroupeGroup(tb testing.TB, bin string, env []string, args ...string) outcome {
	tb.Helper()
	g := startProcessGroup(tb, env, bin, args...)
	code := g.wait(tb, runTimeout)
	return outcome{code, g.stdout.String(), g.stderr.String()}
}

// heldModel is an OpenAI-compatible server whose answers never come: it
// says when a call arrives and when the caller gave it up.
func heldModel(tb testing.TB) (url string, received, released <-chan struct{}) {
	recv, rel := make(chan struct{}, 1), make(chan struct{}, 1)
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read whole, so that the server watches the connection and ends
		// the request's context when the caller gives it up.
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 8<<20))
		select {
		case recv <- struct{}{}:
		default:
		}
		<-r.Context().Done()
		select {
		case rel <- struct{}{}:
		default:
		}
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	go func() { _ = srv.Serve(ln) }()
	tb.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String() + "/v1", recv, rel
}

// TestIntegrationRunOnTemporal: workers serve runs started by troupe run
// --temporal. A run's result equals that of the same run in process; a
// run from another checkout is refused, naming both; Ctrl-C cancels a
// run down to the model call its worker is making; Ctrl-C stops a
// worker; and no process is left.
func TestIntegrationRunOnTemporal(t *testing.T) {
	bin := troupeBesideHelper(t)
	addr := startTemporal(t)
	isolate(t)
	repo, commit := gitShop(t)
	plan := filepath.Join(providers, "openai-compatible", "plan.txt")
	onTemporal := providertest.Replay(t, plan)
	inProcess := providertest.Replay(t, plan)
	held, received, released := heldModel(t)
	base := []string{"TROUPE_RUNS_DIR=" + filepath.Join(t.TempDir(), "runs"), "TROUPE_MODEL=", "OPENAI_API_KEY=", "ANTHROPIC_API_KEY=", "NO_COLOR=1"}
	with := func(env ...string) []string { return append(append([]string{}, base...), env...) }

	workers := []*group{
		startWorker(t, bin, addr, repo, with("OPENAI_BASE_URL="+onTemporal.URL+"/v1")),
		startWorker(t, bin, addr, repo, with("OPENAI_BASE_URL="+held), "--task-queue", "held"),
	}
	assert.Contains(t, workers[0].stderr.String(), "troupe: serving task queue troupe on "+addr+" (namespace default) for checkout "+commit+"; Ctrl-C stops\n")

	t.Run("a run's result is the same as in process", func(t *testing.T) {
		args := []string{"run", "plan", "--repo", repo, "--model", "openai:some-model", "--json", "--progress", "none", taskPlan}
		remote := runTroupeGroup(t, bin, with(), append(args, "--temporal", addr)...)
		local := runTroupeGroup(t, bin, with("OPENAI_BASE_URL="+inProcess.URL+"/v1"), args...)
		require.Equal(t, 0, remote.code, remote.stderr)
		require.Equal(t, 0, local.code, local.stderr)
		var r, l jsonResult
		require.NoError(t, json.Unmarshal([]byte(remote.stdout), &r), remote.stdout)
		require.NoError(t, json.Unmarshal([]byte(local.stdout), &l), local.stdout)
		assert.Equal(t, "completed", r.State)
		assert.Contains(t, r.Output, "## Plan")
		assert.Equal(t, l.Output, r.Output)
		assert.Equal(t, l.Usage, r.Usage)
		assert.Equal(t, []int{l.Turns, l.ToolCalls}, []int{r.Turns, r.ToolCalls})
		assert.Equal(t, l.Model, r.Model)
		assert.FileExists(t, r.Transcript)
	})

	t.Run("progress is shown as in process", func(t *testing.T) {
		o := runTroupeGroup(t, bin, with(), "run", "explore", "--temporal", addr, "--repo", repo, "--model", "offline", "--progress", "plain", "where is the discount applied to the cart total?")
		require.Equal(t, 0, o.code, o.stderr)
		assert.Contains(t, o.stdout, "`cart/cart.go:")
		for _, s := range []string{"running on Temporal at " + addr + ", task queue troupe, model offline (--model)\n", "▸ explore#", "→ grep", "✓ explore completed (done)"} {
			assert.Contains(t, o.stderr, s)
		}
	})

	t.Run("a run from another checkout is refused", func(t *testing.T) {
		other, _ := gitShop(t)
		otherCommit := commitFile(t, other, "NOTES", "a change the workers have not got\n")
		o := runTroupeGroup(t, bin, with(), "run", "explore", "--temporal", addr, "--repo", other, "--model", "offline", "--progress", "none", "x")
		assert.Equal(t, 1, o.code, o.stderr)
		assert.Contains(t, o.stderr, "this worker serves checkout "+commit+" and the run needs "+otherCommit)
	})

	t.Run("Ctrl-C cancels the run on its worker", func(t *testing.T) {
		run := startProcessGroup(t, with(), bin, "run", "explore", "--temporal", addr, "--task-queue", "held", "--repo", repo, "--model", "openai:slow", "--progress", "plain", "anything")
		select {
		case <-received:
		case <-time.After(runTimeout):
			t.Fatalf("the worker never called the model; stderr:\n%s", run.stderr.String())
		}
		start := time.Now()
		run.interrupt(t)
		assert.Equal(t, 130, run.wait(t, runTimeout), run.stderr.String())
		exited := time.Since(start)
		select {
		case <-released:
		case <-time.After(time.Minute):
			t.Fatal("the worker's model call was not cancelled")
		}
		t.Logf("Ctrl-C to exit: %s; to the worker's model call cancelled: %s", exited.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
		assert.Contains(t, run.stderr.String(), "✗ explore cancelled (cancelled)")
		assert.Eventually(t, func() bool { return groupGone(run.cmd.Process.Pid) }, 10*time.Second, 10*time.Millisecond, "a process of the run outlived it")
	})

	t.Run("a type that changes files runs on workers that share a state directory, and --apply brings its work home", func(t *testing.T) {
		chat := newChatServer(t, writeNotes...)
		env := with("OPENAI_BASE_URL=" + chat.URL + "/v1")
		// Two workers of this user, so of one state directory: an agent's
		// steps go to either.
		sharing := []*group{
			startWorker(t, bin, addr, repo, env, "--task-queue", "changes"),
			startWorker(t, bin, addr, repo, env, "--task-queue", "changes"),
		}
		o := runTroupeGroup(t, bin, with(), "run", "general", "--temporal", addr, "--task-queue", "changes", "--repo", repo,
			"--model", "openai:m", "--apply", "--yes", "--progress", "plain", "write notes")
		require.Equal(t, 0, o.code, o.stderr)
		assert.Contains(t, o.stderr, "notes.md | 1 +", "the run's changes came back with its result")
		assert.Contains(t, o.stderr, "'s changes to "+repo+": 1 file written")
		assert.Equal(t, "?? notes.md\n", gitStatus(t, repo))
		assert.Contains(t, troupeBranches(t, repo), "troupe/", "the agent's work is on its branch")
		require.NoError(t, os.Remove(filepath.Join(repo, "notes.md")))
		for _, w := range sharing {
			w.interrupt(t)
			assert.Equal(t, 130, w.wait(t, time.Minute), w.stderr.String())
		}
	})

	for _, w := range workers {
		w.interrupt(t)
		assert.Equal(t, 130, w.wait(t, time.Minute), w.stderr.String())
		assert.Contains(t, w.stderr.String(), `msg="Stopped Worker"`, "the helper stopped its worker")
		assert.Eventually(t, func() bool { return groupGone(w.cmd.Process.Pid) }, 10*time.Second, 10*time.Millisecond, "a process of the worker outlived it")
	}
}

// TestIntegrationRunOnTemporalTimes logs how long the same small run
// takes in process and on Temporal on loopback, each run as a whole
// command, side by side; it asserts nothing about them.
func TestIntegrationRunOnTemporalTimes(t *testing.T) {
	bin := troupeBesideHelper(t)
	addr := startTemporal(t)
	isolate(t)
	repo, _ := gitShop(t)
	env := []string{"TROUPE_RUNS_DIR=" + filepath.Join(t.TempDir(), "runs"), "TROUPE_MODEL=offline", "OPENAI_API_KEY=", "ANTHROPIC_API_KEY=", "NO_COLOR=1"}
	startWorker(t, bin, addr, repo, env)
	args := []string{"run", "explore", "--repo", repo, "--progress", "none", "where is the discount applied to the cart total?"}
	const rounds = 5
	times := map[string][]time.Duration{}
	for range rounds {
		for name, extra := range map[string][]string{"in process": nil, "on Temporal": {"--temporal", addr}} {
			start := time.Now()
			o := runTroupeGroup(t, bin, env, append(args, extra...)...)
			times[name] = append(times[name], time.Since(start))
			require.Equal(t, 0, o.code, o.stderr)
		}
	}
	for name, ts := range times {
		sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
		t.Logf("troupe run explore %s: median %s, fastest %s, slowest %s of %d", name, ts[rounds/2].Round(time.Millisecond), ts[0].Round(time.Millisecond), ts[rounds-1].Round(time.Millisecond), rounds)
	}
}

// commitFile writes a file into the repository at dir and commits it,
// returning the new commit.
func commitFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	for _, args := range [][]string{{"add", name}, {"commit", "-q", "-m", "add " + name}} {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@localhost", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	cmd := exec.Command("git", "rev-parse", "HEAD")
	cmd.Dir = dir
	out, err := cmd.Output()
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}
