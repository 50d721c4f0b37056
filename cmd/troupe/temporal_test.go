package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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

// These tests play the Temporal helper with testdata/fakehelper, which
// speaks the helper's protocols with no cluster behind it; the tests
// with a real cluster are in temporal_integration_test.go.

var (
	fakeHelperOnce sync.Once
	fakeHelperBin  string
	fakeHelperErr  error
)

// fakeHelperDir returns a fresh directory holding the fake helper, as
// troupe-temporal, for PATH.
func fakeHelperDir(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the fake helper")
	}
	fakeHelperOnce.Do(func() {
		pluginsMu.Lock()
		defer pluginsMu.Unlock()
		if pluginTmp == "" {
			if pluginTmp, fakeHelperErr = os.MkdirTemp("", "troupe-cmd-plugin"); fakeHelperErr != nil {
				return
			}
		}
		fakeHelperBin = filepath.Join(pluginTmp, "fakehelper")
		out, err := goCommand("build", "-o", fakeHelperBin, "./testdata/fakehelper").CombinedOutput()
		if err != nil {
			fakeHelperErr = fmt.Errorf("building the fake helper: %v\n%s", err, out)
		}
	})
	require.NoError(t, fakeHelperErr)
	dir := t.TempDir()
	require.NoError(t, os.Symlink(fakeHelperBin, filepath.Join(dir, helperName)))
	return dir
}

// fakeEnv puts the fake helper on PATH, playing scenario, and returns the
// file where it marks what happened.
func fakeEnv(t *testing.T, scenario string) (marks string) {
	t.Helper()
	dir := fakeHelperDir(t)
	marks = filepath.Join(t.TempDir(), "marks")
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("TEMPORAL_TROUPE_FAKE", scenario)
	t.Setenv("TEMPORAL_TROUPE_FAKE_MARKS", marks)
	return marks
}

// readMarks returns the fake helper's marks, a line each; none before
// it starts.
func readMarks(path string) []string {
	b, _ := os.ReadFile(path)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// mark returns the rest of the fake helper's first mark that starts with
// prefix, and whether there is one.
func mark(path, prefix string) (string, bool) {
	for _, m := range readMarks(path) {
		if rest, ok := strings.CutPrefix(m, prefix); ok {
			return rest, true
		}
	}
	return "", false
}

// hasMark says whether the fake helper has made a mark starting with
// prefix.
func hasMark(path, prefix string) func() bool {
	return func() bool {
		_, ok := mark(path, prefix)
		return ok
	}
}

// gitShop is a copy of the shop made a git repository of one commit,
// and that commit.
func gitShop(t *testing.T) (dir, commit string) {
	t.Helper()
	dir = shopCopy(t)
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@localhost", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-q", "-m", "shop")
	return dir, git("rev-parse", "HEAD")
}

func TestWorkerAndRunOnTemporalRefuseBadUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"worker", "--repo", shop}, "troupe worker needs --temporal HOST:PORT"},
		{[]string{"worker", "--repo", shop, "--temporal"}, "flag needs an argument: --temporal; 'troupe worker --help' lists the flags"},
		{[]string{"worker", "--repo", shop, "--temporal", "localhost"}, `--temporal "localhost": give the address of the Temporal cluster's frontend as HOST:PORT`},
		{[]string{"worker", "--repo", shop, "--temporal", "127.0.0.1:7233", "--task-queue", " "}, "--task-queue is empty; give a name"},
		{[]string{"worker", "--repo", shop, "--temporal", "127.0.0.1:7233", "extra"}, `unexpected argument "extra"`},
		{[]string{"run", "explore", "x", "--repo", shop, "--temporal"}, "flag needs an argument: --temporal; 'troupe run --help' lists the flags"},
		{[]string{"run", "explore", "x", "--repo", shop, "--temporal", ":7233"}, "as HOST:PORT, such as 127.0.0.1:7233"},
		{[]string{"run", "explore", "x", "--repo", shop, "--task-queue", "q"}, "--task-queue is for runs on Temporal; give --temporal HOST:PORT too"},
		{[]string{"run", "explore", "x", "--repo", shop, "--namespace", "n"}, "--namespace is for runs on Temporal"},
		{[]string{"run", "explore", "x", "--repo", shop, "--temporal", "127.0.0.1:7233", "--yes"}, "start them with 'troupe worker --yes'"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			marks := fakeEnv(t, "complete")
			o := troupe(t, tt.args...)
			assert.Equal(t, 2, o.code, o.stderr)
			assert.Contains(t, o.stderr, tt.want)
			assert.Empty(t, o.stdout)
			assert.NoFileExists(t, marks, "the helper was started for a command line that is wrong")
		})
	}
}

func TestWorkerAndRunOnTemporalWithoutTheHelperSayHowToBuildIt(t *testing.T) {
	for _, args := range [][]string{
		{"worker", "--temporal", "127.0.0.1:7233", "--repo", shop},
		{"run", "explore", "--temporal", "127.0.0.1:7233", "--repo", shop, "x"},
	} {
		t.Run(args[0], func(t *testing.T) {
			t.Setenv("PATH", t.TempDir()) // no troupe-temporal on it
			o := troupe(t, args...)
			assert.Equal(t, 2, o.code, o.stderr)
			assert.Contains(t, o.stderr, "troupe-temporal, the helper that speaks to the cluster, and it is neither beside troupe nor on PATH")
			assert.Contains(t, o.stderr, "'make build' builds it")
			assert.Contains(t, o.stderr, "'cd manager/temporal && go install ./cmd/troupe-temporal'")
			assert.Empty(t, o.stdout)
		})
	}
}

// runOnFake runs the command in process with the fake helper playing
// scenario, a key in the environment, and no model configured.
func runOnFake(t *testing.T, scenario string, args ...string) (outcome, string) {
	t.Helper()
	isolate(t)
	marks := fakeEnv(t, scenario)
	t.Setenv("TROUPE_RUNS_DIR", filepath.Join(t.TempDir(), "runs"))
	t.Setenv("TROUPE_MODEL", "")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-must-not-reach-the-helper")
	var out, errb bytes.Buffer
	code := execute(context.Background(), args, &out, &errb)
	return outcome{code, out.String(), errb.String()}, marks
}

// A run on Temporal goes to the helper, with the run's checkout and the
// flags' queue and namespace and nothing of the environment but its own
// settings; its events are shown as a run's in process are, and its
// outcome printed and exited with.
func TestRunOnTemporalRelaysTheHelpersRun(t *testing.T) {
	repo, commit := gitShop(t)
	o, marks := runOnFake(t, "complete", "run", "plan", "--repo", repo, "--progress", "plain",
		"--temporal", "127.0.0.1:7233", "--task-queue", "reviews", "--namespace", "team", taskPlan)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Equal(t, "fake output for: "+taskPlan+"\n", o.stdout, "a type that needs a language model runs with no model configured here")
	for _, line := range []string{
		"running on Temporal at 127.0.0.1:7233, task queue reviews (its workers choose the model)\n",
		"working in " + repo + " (--repo)\n",
		"▸ plan#",
		`→ grep {"pattern":"discount"}`,
		"  ▸ [helper] explore#child-00 started: look at the cart\n",
		"  ✓ [helper] explore#child-00 completed\n",
		"✓ plan completed (done) in ",
		"· 2 turns · 1 tool calls · 120 tokens in / 12 out in all (own 100 in / 10 out)\n",
	} {
		assert.Contains(t, o.stderr, line)
	}
	assert.NotContains(t, o.stderr, "· model ", "the workers chose the model, and the summary does not guess it")

	args, _ := mark(marks, "args ")
	assert.Equal(t, "run --address 127.0.0.1:7233 --namespace team --task-queue reviews --root "+repo+" --checkout "+commit+" --log-level warn", args)
	env, _ := mark(marks, "env ")
	assert.NotContains(t, env, "ANTHROPIC_API_KEY", "a key reached the helper")
	assert.Contains(t, strings.Fields(env), "TEMPORAL_TROUPE_FAKE", "the helper's own settings reach it")
	run, _ := mark(marks, "run ")
	assert.Contains(t, run, ` plan "`+taskPlan+`"`)
}

func TestRunOnTemporalPrintsItsResultAsJSON(t *testing.T) {
	o, marks := runOnFake(t, "complete", "run", "explore", "--repo", shopCopy(t), "--json", "--progress", "none", "--temporal", "127.0.0.1:7233", "--model", "openai:gpt-4o-mini", "x")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Empty(t, o.stderr)
	var res jsonResult
	require.NoError(t, json.Unmarshal([]byte(o.stdout), &res), o.stdout)
	assert.Equal(t, "completed", res.State)
	assert.Equal(t, "openai:gpt-4o-mini", res.Model)
	assert.Equal(t, 2, res.Turns)
	assert.Equal(t, 1, res.ToolCalls)
	assert.Equal(t, 120, res.Usage.InputTokens)
	assert.FileExists(t, res.Transcript, "the relayed events are the run's transcript")
	args, _ := mark(marks, "args ")
	assert.Contains(t, args, " --task-queue troupe ", "the default queue")
	assert.Contains(t, args, " --checkout  --log-level", "a directory in no repository names no checkout")
}

func TestRunOnTemporalExitsWithTheRunsOutcome(t *testing.T) {
	for _, tt := range []struct {
		scenario string
		code     int
		want     string
	}{
		{"fail", 1, "troupe: failed budget_turns: the turn budget of 1 is spent\n"},
		{"unreachable", 1, "troupe: failed backend_error: agent backend failed: "},
	} {
		t.Run(tt.scenario, func(t *testing.T) {
			o, _ := runOnFake(t, tt.scenario, "run", "explore", "--repo", shop, "--progress", "plain", "--temporal", "127.0.0.1:7233", "x")
			assert.Equal(t, tt.code, o.code, o.stderr)
			assert.Contains(t, o.stderr, tt.want)
			if tt.scenario == "unreachable" {
				assert.Contains(t, o.stderr, helperName+": cannot reach the Temporal cluster (fake)")
			}
		})
	}
}

// A type that changes files goes to the workers, which open its
// workspace; the command opens none of its own.
func TestRunOnTemporalHandsATypeThatChangesFilesToItsWorkers(t *testing.T) {
	o, marks := runOnFake(t, "complete", "run", "general", "--repo", shopCopy(t), "--temporal", "127.0.0.1:7233", "fix the cart")
	assert.Equal(t, 0, o.code, o.stderr)
	_, ran := mark(marks, "args ")
	assert.True(t, ran, "the run reached the helper")
	assert.NoDirExists(t, filepath.Join(os.Getenv("XDG_STATE_HOME"), "troupe", "workspaces"), "the command made a workspace of its own")
}

// --apply applies changes to the directory they were made from, and
// that is the workers' checkout: one elsewhere is not the user's tree.
func TestRunOnTemporalAppliesNoChangesMadeInAnotherCheckout(t *testing.T) {
	repo := shopCopy(t)
	o, _ := runOnFake(t, "changed-elsewhere", "run", "general", "--repo", repo, "--temporal", "127.0.0.1:7233", "--apply", "--yes", "write notes")
	assert.Equal(t, 1, o.code, o.stderr)
	assert.Contains(t, o.stderr, "notes.md | 1 +", "the changes came back with the run's outcome")
	assert.Contains(t, o.stderr, "troupe: --apply: nothing was applied: the changes were made from /srv/worker/checkout, not "+repo+
		"; they are on branch troupe/run/agent of /srv/worker/checkout/.git, to merge there")
	assert.NoFileExists(t, filepath.Join(repo, "notes.md"))
}

// startGroup starts cmd as the leader of a process group of its own, as
// a shell starts a job, and kills the group when the test ends.
func startGroup(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
}

// waitExit waits for cmd to exit, within bound, and returns its status.
func waitExit(t *testing.T, cmd *exec.Cmd, bound time.Duration) int {
	t.Helper()
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(bound):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Fatalf("%s did not exit within %s", cmd.Path, bound)
	}
	return cmd.ProcessState.ExitCode()
}

// groupGone reports whether no process is left in the group pgid.
func groupGone(pgid int) bool {
	return errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}

// Ctrl-C at a terminal reaches the whole job: troupe and its helper.
// The helper lives on; troupe sends it the cancel, the helper ends the
// run and says so, and troupe exits 130 with no process left behind.
func TestRunOnTemporalInterruptedCancelsTheRun(t *testing.T) {
	bin := troupeBinary(t)
	isolate(t)
	marks := fakeEnv(t, "hold")
	cmd := exec.Command(bin, "run", "explore", "--repo", shop, "--progress", "plain", "--temporal", "127.0.0.1:7233", "where?")
	cmd.Env = append(os.Environ(), "TROUPE_RUNS_DIR="+filepath.Join(t.TempDir(), "runs"), "NO_COLOR=1")
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	startGroup(t, cmd)
	require.Eventually(t, hasMark(marks, "holding"), time.Minute, 10*time.Millisecond, "the helper never held the run: %v", readMarks(marks))
	require.NoError(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGINT))
	code := waitExit(t, cmd, 30*time.Second)
	assert.Equal(t, 130, code, stderr.String())
	_, cancelled := mark(marks, "cancelled")
	assert.True(t, cancelled, "the helper was not told to cancel the run: %v", readMarks(marks))
	assert.Contains(t, stderr.String(), "✗ explore cancelled (cancelled)")
	pid, _ := mark(marks, "started ")
	n, err := strconv.Atoi(pid)
	require.NoError(t, err)
	assert.False(t, processAlive(n), "the helper outlived troupe")
	assert.Eventually(t, func() bool { return groupGone(cmd.Process.Pid) }, 10*time.Second, 10*time.Millisecond, "a process of the job outlived it")
}

// troupe worker serves the helper the steps it asks for, from the
// project's manager; a helper that ends by itself ends the worker with
// exit 1.
func TestWorkerServesTheHelpersSteps(t *testing.T) {
	repo, commit := gitShop(t)
	o, marks := runOnFake(t, "exit", "worker", "--repo", repo, "--temporal", "127.0.0.1:7233", "--task-queue", "reviews")
	assert.Equal(t, 1, o.code, o.stderr)
	assert.Contains(t, o.stderr, "troupe: serving task queue reviews on 127.0.0.1:7233 (namespace default) for checkout "+commit+"; Ctrl-C stops\n")
	assert.Contains(t, o.stderr, "ended the worker unasked; what it said above tells why")
	args, _ := mark(marks, "args ")
	assert.Equal(t, "worker --address 127.0.0.1:7233 --namespace default --task-queue reviews --root "+repo+" --checkout "+commit+" --log-level info", args)
	step, ok := mark(marks, "step ")
	assert.True(t, ok, "the start step was not served: %v", readMarks(marks))
	assert.True(t, strings.HasPrefix(step, "model anthropic:"), "the worker's manager chooses the model from its own keys, as troupe run does: %s", step)
	assert.True(t, strings.HasSuffix(step, ", 2 messages"), step)
}

// Ctrl-C stops a worker: its helper, which lives through the interrupt,
// sees its stdin close and ends; the worker exits 130 with no process
// left behind.
func TestWorkerInterruptedStopsItsHelper(t *testing.T) {
	bin := troupeBinary(t)
	isolate(t)
	marks := fakeEnv(t, "wait")
	cmd := exec.Command(bin, "worker", "--repo", shop, "--temporal", "127.0.0.1:7233")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	startGroup(t, cmd)
	require.Eventually(t, hasMark(marks, "step "), time.Minute, 10*time.Millisecond, "the helper's step was never served: %s", stderr.String())
	require.NoError(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGINT))
	assert.Equal(t, 130, waitExit(t, cmd, 30*time.Second), stderr.String())
	_, closed := mark(marks, "stdin closed")
	assert.True(t, closed, "the helper was not told to stop by its stdin: %v", readMarks(marks))
	assert.Eventually(t, func() bool { return groupGone(cmd.Process.Pid) }, 10*time.Second, 10*time.Millisecond, "a process of the worker's group outlived it")
}
