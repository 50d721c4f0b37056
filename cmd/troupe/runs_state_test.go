//go:build unix

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// within runs the command and fails the test, rather than hanging it,
// when the command does not return in time.
func within(t *testing.T, d time.Duration, args ...string) outcome {
	t.Helper()
	done := make(chan outcome, 1)
	go func() { done <- execCapture(args...) }()
	select {
	case o := <-done:
		return o
	case <-time.After(d):
		t.Fatalf("troupe %s hung", strings.Join(args, " "))
		return outcome{}
	}
}

// row finds the runs list line of a run.
func row(t *testing.T, list, id string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(id) + `\s.*$`).FindString(list)
	require.NotEmpty(t, m, "no row for %s in:\n%s", id, list)
	return m
}

func TestRunsListSaysWhatBecameOfEachRun(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	o := runIn(t, runs, "run", "explore", "--repo", shop, "--json", "--progress", "none", "ChargeWithRetry")
	require.Equal(t, 0, o.code, o.stderr)
	var res jsonResult
	require.NoError(t, json.Unmarshal([]byte(o.stdout), &res))

	// A run cut short: the real writer's lines up to before the end, as a
	// crash leaves them, with no process holding the run.
	data, err := os.ReadFile(res.Transcript)
	require.NoError(t, err)
	lines := strings.SplitAfter(strings.TrimSpace(string(data)), "\n")
	require.Greater(t, len(lines), 3)
	cut := strings.Join(lines[:3], "") + lines[3][:len(lines[3])/2]
	// Another run's file, so its agent is another.
	cut = strings.ReplaceAll(cut, res.ID, "cut-agent")
	require.NoError(t, os.WriteFile(filepath.Join(runs, "cut.jsonl"), []byte(cut), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(runs, "empty.jsonl"), nil, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(runs, "garbage.jsonl"), []byte("not json\nat all\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(runs, "stranger.jsonl"), []byte(`{"seq":1,"kind":"tool_call"}`+"\n"), 0o600))
	require.NoError(t, syscall.Mkfifo(filepath.Join(runs, "fifo.jsonl"), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(runs, "dir.jsonl"), 0o700))

	o = within(t, 10*time.Second, "runs", "list")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Empty(t, o.stderr, "each run is reported in the list, not in log lines")
	assert.Regexp(t, `^\S+\s+explore\s+completed\s`, row(t, o.stdout, res.ID))
	assert.Regexp(t, `^cut-agent\s+explore\s+interrupted\s.*ChargeWithRetry.*killed or crashed`, row(t, o.stdout, "cut-agent"))
	assert.Regexp(t, `^empty\s+-\s+unreadable\s+-\s+\(empty`, row(t, o.stdout, "empty"))
	assert.Regexp(t, `^garbage\s+-\s+unreadable\s+-\s+\(.*invalid character`, row(t, o.stdout, "garbage"))
	assert.Regexp(t, `^stranger\s+-\s+unreadable\s+-\s+\(no spawned event`, row(t, o.stdout, "stranger"))
	assert.Regexp(t, `^fifo\s+-\s+unreadable\s+-\s+\(.*named pipe`, row(t, o.stdout, "fifo"))
	assert.Regexp(t, `^dir\s+-\s+unreadable\s+-\s+\(.*directory`, row(t, o.stdout, "dir"))
	assert.NotContains(t, o.stdout, "0001-01-01")

	o = within(t, 10*time.Second, "runs", "list", "--json")
	require.Equal(t, 0, o.code, o.stderr)
	var records []runRecord
	require.NoError(t, json.Unmarshal([]byte(o.stdout), &records))
	states := map[string]string{}
	for _, r := range records {
		states[r.ID] = r.State
		if r.State == stateInterrupted || r.State == stateUnreadable {
			assert.NotEmpty(t, r.Note, "%s says why", r.ID)
		}
	}
	assert.Equal(t, map[string]string{res.ID: "completed", "cut-agent": "interrupted", "empty": "unreadable", "garbage": "unreadable",
		"stranger": "unreadable", "fifo": "unreadable", "dir": "unreadable"}, states)

	for _, id := range []string{"empty", "garbage", "fifo", "dir"} {
		o = within(t, 10*time.Second, "runs", "show", id)
		assert.Equal(t, 1, o.code, "runs show %s", id)
		assert.Contains(t, o.stderr, "run "+id+": the transcript ")
		assert.Contains(t, o.stderr, "is unreadable: ")
		assert.Empty(t, o.stdout)
	}
	o = within(t, 10*time.Second, "runs", "show", "cut-agent")
	assert.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stdout, "▸ explore#")
	assert.Contains(t, o.stdout, "interrupted: ended without a completed event")
}

// TestKilledRunShowsInterrupted runs the real command as a process on a
// model that never answers, kills it with SIGKILL, and lists the runs.
func TestKilledRunShowsInterrupted(t *testing.T) {
	bin := troupeBinary(t)
	srv, received := holdingServer(t)

	runs := filepath.Join(t.TempDir(), "runs")
	isolate(t)
	cmd := exec.Command(bin, "run", "explore", "--repo", shop, "--model", "openai:never", "--progress", "plain", "anything")
	cmd.Env = append(os.Environ(), "TROUPE_RUNS_DIR="+runs, "OPENAI_BASE_URL="+srv.URL+"/v1", "OPENAI_API_KEY=", "TROUPE_MODEL=")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var id string
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if m := regexp.MustCompile(`▸ explore#(\w+) started`).FindStringSubmatch(sc.Text()); m != nil {
			id = m[1]
			break
		}
	}
	require.NotEmpty(t, id, "the run started")
	go func() { _, _ = bufio.NewReader(stderr).WriteTo(&bytes.Buffer{}) }()
	select {
	case <-received:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the model was never called")
	}

	t.Setenv("TROUPE_RUNS_DIR", runs)
	// The run's first events reach its transcript a moment after they
	// happen (later on a busy machine): it is listed again until they have.
	running := regexp.MustCompile(`(?m)^` + id + `\S*\s+explore\s+running\s`)
	var o outcome
	for deadline := time.Now().Add(20 * time.Second); ; {
		o = within(t, 10*time.Second, "runs", "list")
		require.Equal(t, 0, o.code, o.stderr)
		if running.MatchString(o.stdout) || time.Now().After(deadline) {
			break
		}
	}
	assert.Regexp(t, running, o.stdout, "alive while the process runs")

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()

	o = within(t, 10*time.Second, "runs", "list")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Regexp(t, `(?m)^`+id+`\S*\s+explore\s+interrupted\s.*killed or crashed`, o.stdout)
}

func TestConfigThatIsAFIFOIsRefused(t *testing.T) {
	repo := t.TempDir()
	require.NoError(t, os.CopyFS(repo, os.DirFS(shop)))
	require.NoError(t, os.Mkdir(filepath.Join(repo, ".troupe"), 0o755))
	require.NoError(t, syscall.Mkfifo(filepath.Join(repo, ".troupe", "config.yaml"), 0o644))
	runs := filepath.Join(t.TempDir(), "runs")
	isolate(t)
	t.Setenv("TROUPE_RUNS_DIR", runs)
	t.Setenv("TROUPE_MODEL", "")
	o := within(t, 10*time.Second, "run", "explore", "--repo", repo, "task")
	assert.Equal(t, 2, o.code)
	assert.Contains(t, o.stderr, filepath.Join(".troupe", "config.yaml")+": is a named pipe, not a regular file")
	assert.NoDirExists(t, runs)
}
