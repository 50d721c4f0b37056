//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/builtin/process"
)

// These tests drive troupe mcp serve with a client no one here wrote: the
// MCP Inspector's command-line mode, installed from npm by pinned version
// (.ci/mcp-servers; make integration installs it and names its bin
// directory in TROUPE_MCP_SERVERS_BIN). Each Inspector invocation is a
// process of its own that connects, makes one request, prints the result
// as JSON and exits.

const (
	// inspectorTimeout bounds one Inspector invocation, from its start to
	// the exit of all it started.
	inspectorTimeout = 2 * time.Minute
	// maxInspectorOutput bounds what an invocation may print.
	maxInspectorOutput = 4 << 20
)

// inspectorBin is the Inspector's command-line client, installed by make
// integration.
func inspectorBin(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("TROUPE_MCP_SERVERS_BIN")
	if dir == "" {
		t.Skip("TROUPE_MCP_SERVERS_BIN is not set: run make integration, which installs the MCP Inspector from .ci/mcp-servers")
	}
	bin := filepath.Join(dir, "mcp-inspector-cli")
	_, err := os.Stat(bin)
	require.NoError(t, err, "TROUPE_MCP_SERVERS_BIN names no MCP Inspector: run make integration, which installs it")
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("the MCP Inspector needs node on PATH")
	}
	return bin
}

// inspectorEnv is the environment of the Inspector and the troupe it
// drives: servedEnv's, with no key, no model set and a home of the test's
// own. Without the Inspector the test is skipped before troupe is built.
func inspectorEnv(t *testing.T) []string {
	t.Helper()
	inspectorBin(t)
	return servedEnv(t)
}

// inspect runs the Inspector once in CLI mode against target (a command
// and its arguments, or a URL) and decodes the JSON it prints into out.
// request is its --method and that method's flags; they come after the
// target, as the Inspector's documentation has them. The invocation and
// all it starts are gone when inspect returns.
func inspect(t *testing.T, env, target []string, out any, request ...string) {
	t.Helper()
	bin := inspectorBin(t)
	ctx, cancel := context.WithTimeout(context.Background(), inspectorTimeout)
	defer cancel()
	args := append(append([]string{"--cli"}, target...), request...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	// This Inspector finds its own package.json by a path it checks from
	// its working directory; the directory that holds node_modules has
	// one, as npm leaves it.
	cmd.Dir = filepath.Dir(filepath.Dir(bin))
	stdout, stderr := &cappedBuffer{max: maxInspectorOutput}, &cappedBuffer{max: maxInspectorOutput}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	process.Contain(cmd) // the Inspector, its node child and the troupe it starts share a group
	cmd.Cancel = func() error { return process.KillGroup(cmd.Process.Pid) }
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { killLeftovers(cmd.Process.Pid) })
	err := cmd.Wait()
	t.Logf("inspector %s: %s", strings.Join(request, " "), time.Since(start).Round(time.Millisecond))
	require.NoError(t, err, "the Inspector failed; its stderr:\n%s", stderr.String())
	assertGroupGone(t, cmd.Process.Pid, "the Inspector's")
	require.NoError(t, json.Unmarshal(stdout.Bytes(), out), "the Inspector printed:\n%s", stdout.String())
}

// stdioTarget is the command the Inspector starts as its server: troupe
// mcp serve on the shop, over stdio. The shop's path is absolute: the
// Inspector starts troupe in its own working directory.
func stdioTarget(t *testing.T) []string {
	t.Helper()
	repo, err := filepath.Abs(shop)
	require.NoError(t, err)
	return []string{troupeBinary(t), "mcp", "serve", "--repo", repo}
}

// inspectedTools is what the Inspector prints for tools/list.
type inspectedTools struct {
	Tools []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	} `json:"tools"`
}

func (l inspectedTools) names() []string {
	var names []string
	for _, tool := range l.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// inspectedCall is what the Inspector prints for tools/call.
type inspectedCall struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent *jsonResult `json:"structuredContent"`
	IsError           bool        `json:"isError"`
}

func (c inspectedCall) text() string {
	var b strings.Builder
	for _, part := range c.Content {
		if part.Type == "text" {
			b.WriteString(part.Text)
		}
	}
	return b.String()
}

// inspectedResource is what the Inspector prints for resources/read.
type inspectedResource struct {
	Contents []struct {
		URI      string `json:"uri"`
		MIMEType string `json:"mimeType"`
		Text     string `json:"text"`
	} `json:"contents"`
}

// servedRun is one run as troupe://runs lists it.
type servedRun struct {
	ID    string `json:"id"`
	URI   string `json:"uri"`
	Type  string `json:"type"`
	Task  string `json:"task"`
	State string `json:"state"`
}

// callExplore has the Inspector call explore through target and checks
// that the discount is found where the shop applies it.
func callExplore(t *testing.T, env, target []string) jsonResult {
	t.Helper()
	var call inspectedCall
	inspect(t, env, target, &call, "--method", "tools/call", "--tool-name", "explore", "--tool-arg", "task=where is the discount applied?")
	require.False(t, call.IsError, call.text())
	require.NotNil(t, call.StructuredContent, "the result carries the run's result as structured content:\n%s", call.text())
	r := *call.StructuredContent
	assert.Equal(t, "completed", r.State)
	assert.Equal(t, "offline", r.Model, "no key and no TROUPE_MODEL: the offline model")
	require.NotEmpty(t, r.Data.Findings, call.text())
	assert.Equal(t, "cart/cart.go", r.Data.Findings[0].Path, "the best finding is the file that applies discounts")
	assert.Positive(t, r.Data.Findings[0].Line)
	assert.Contains(t, call.text(), "cart/cart.go", "the report names what it found")
	assert.Contains(t, call.text(), "[run "+r.ID, "the report ends with the run's ID")
	return r
}

// readRuns has the Inspector read troupe://runs through target.
func readRuns(t *testing.T, env, target []string) []servedRun {
	t.Helper()
	var res inspectedResource
	inspect(t, env, target, &res, "--method", "resources/read", "--uri", "troupe://runs")
	require.Len(t, res.Contents, 1)
	assert.Equal(t, "troupe://runs", res.Contents[0].URI)
	assert.Equal(t, "application/json", res.Contents[0].MIMEType)
	var runs []servedRun
	require.NoError(t, json.Unmarshal([]byte(res.Contents[0].Text), &runs), "troupe://runs is a JSON list:\n%s", res.Contents[0].Text)
	return runs
}

func TestIntegrationTheInspectorListsTheServedTypesOverStdio(t *testing.T) {
	env := inspectorEnv(t)
	var tools inspectedTools
	inspect(t, env, stdioTarget(t), &tools, "--method", "tools/list")
	assert.Equal(t, []string{"explore", "general", "plan", "review"}, tools.names())
	for _, tool := range tools.Tools {
		assert.NotEmpty(t, tool.Description, "%s is described", tool.Name)
	}
}

func TestIntegrationTheInspectorCallsExploreOverStdioAndGetsItsFindings(t *testing.T) {
	env := inspectorEnv(t)
	r := callExplore(t, env, stdioTarget(t))
	assert.FileExists(t, r.Transcript, "the run is recorded, and outlives the server that ran it")
}

// Each Inspector invocation starts a server of its own, which lists the
// runs it started: none, but a list.
func TestIntegrationTheInspectorReadsTheRunsResourceOverStdio(t *testing.T) {
	runs := readRuns(t, inspectorEnv(t), stdioTarget(t))
	assert.Empty(t, runs, "a server just started has started no run")
}

// One troupe mcp serve --http, three Inspector invocations: the tools,
// a call to explore, and the runs, which list that call's run.
func TestIntegrationTheInspectorDrivesServeOverStreamableHTTP(t *testing.T) {
	env := inspectorEnv(t)
	url, stop := serveHTTP(t, env)
	target := []string{url, "--transport", "http"}

	var tools inspectedTools
	inspect(t, env, target, &tools, "--method", "tools/list")
	assert.Equal(t, []string{"explore", "general", "plan", "review"}, tools.names())

	r := callExplore(t, env, target)

	runs := readRuns(t, env, target)
	require.Len(t, runs, 1, "the server lists the run it started for the call")
	assert.Equal(t, r.ID, runs[0].ID)
	assert.Equal(t, "completed", runs[0].State)
	assert.Equal(t, "where is the discount applied?", runs[0].Task)

	var rec inspectedResource
	inspect(t, env, target, &rec, "--method", "resources/read", "--uri", runs[0].URI)
	require.Len(t, rec.Contents, 1)
	var record struct {
		Result *jsonResult `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(rec.Contents[0].Text), &record), rec.Contents[0].Text)
	require.NotNil(t, record.Result, "an ended run's record has its result")
	assert.Equal(t, r.ID, record.Result.ID)
	assert.Equal(t, "cart/cart.go", record.Result.Data.Findings[0].Path)

	assert.Equal(t, exitInterrupted, stop(), "interrupted, troupe mcp serve --http exits as an interrupted command")
}

// serveHTTP starts troupe mcp serve --http on a free loopback port as a
// process of its own and returns its endpoint, read from what it says on
// stderr, and stop, which interrupts it and returns its exit status once
// it and all it started are gone.
func serveHTTP(t *testing.T, env []string) (url string, stop func() int) {
	t.Helper()
	cmd := exec.Command(troupeBinary(t), "mcp", "serve", "--repo", shop, "--http", "127.0.0.1:0")
	cmd.Env = env
	stderr := &urlWatcher{cappedBuffer: cappedBuffer{max: maxInspectorOutput}, found: make(chan string, 1)}
	cmd.Stderr = stderr
	cmd.WaitDelay = 10 * time.Second
	process.Contain(cmd)
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case err := <-exited:
			exited <- err
		default:
			_ = process.KillGroup(cmd.Process.Pid)
			<-exited
		}
		killLeftovers(cmd.Process.Pid)
	})
	select {
	case url = <-stderr.found:
	case err := <-exited:
		exited <- err
		t.Fatalf("troupe mcp serve --http exited before serving (%v):\n%s", err, stderr.String())
	case <-time.After(time.Minute):
		t.Fatalf("troupe mcp serve --http did not say where it listens within a minute:\n%s", stderr.String())
	}
	return url, func() int {
		require.NoError(t, cmd.Process.Signal(os.Interrupt))
		var err error
		select {
		case err = <-exited:
			exited <- err
		case <-time.After(time.Minute):
			t.Fatalf("troupe mcp serve --http did not stop within a minute of an interrupt:\n%s", stderr.String())
		}
		assertGroupGone(t, cmd.Process.Pid, "troupe mcp serve's")
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("waiting for troupe mcp serve: %v", err)
		}
		return cmd.ProcessState.ExitCode()
	}
}

// assertGroupGone checks that no live process is left in the process
// group pgid: a process that outlived the one that led the group.
func assertGroupGone(t *testing.T, pgid int, what string) {
	t.Helper()
	assert.Eventually(t, func() bool { return len(groupMembers(pgid)) == 0 }, 10*time.Second, 10*time.Millisecond,
		"%s process group outlived it: %v", what, groupMembers(pgid))
}

// killLeftovers kills what is left of process group pgid once its leader
// was waited for: while a process is in the group, its ID is not given to
// another process, so no stranger is killed.
func killLeftovers(pgid int) {
	if len(groupMembers(pgid)) > 0 {
		_ = process.KillGroup(pgid)
	}
}

// groupMembers lists the live processes of process group pgid, from
// /proc/PID/stat: "pid (comm) state ppid pgrp ...".
func groupMembers(pgid int) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(stat)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 3 || f[0] == "Z" {
			continue
		}
		if pgrp, err := strconv.Atoi(f[2]); err == nil && pgrp == pgid {
			pids = append(pids, pid)
		}
	}
	return pids
}

// cappedBuffer keeps what is written to it up to max bytes, and refuses
// more, so a process that prints without end fails instead of filling
// memory.
type cappedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

var errOutputTooLong = errors.New("output past its limit")

func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len()+len(p) > b.max {
		return 0, errOutputTooLong
	}
	return b.buf.Write(p)
}

func (b *cappedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

func (b *cappedBuffer) String() string { return string(b.Bytes()) }

// urlWatcher is troupe's stderr: it sends the endpoint troupe says it
// serves on to found, once, when the line that says it has arrived.
type urlWatcher struct {
	cappedBuffer
	found chan string
	sent  bool
}

func (w *urlWatcher) Write(p []byte) (int, error) {
	n, err := w.cappedBuffer.Write(p)
	if err != nil || w.sent {
		return n, err
	}
	if m := servingURL.FindStringSubmatch(w.String()); m != nil {
		w.sent = true
		w.found <- m[1]
	}
	return n, nil
}
