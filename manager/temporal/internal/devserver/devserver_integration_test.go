//go:build integration

package devserver_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/troupe-dev/troupe/manager/temporal/internal/devserver"
)

// greet is the workflow the test runs: it calls one activity and returns
// what it returned.
func greet(ctx workflow.Context, name string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var greeting string
	err := workflow.ExecuteActivity(ctx, hello, name).Get(ctx, &greeting)
	return greeting, err
}

func hello(_ context.Context, name string) (string, error) {
	return "hello, " + name, nil
}

func TestIntegrationDevServerStartsAndStops(t *testing.T) {
	s := devserver.Start(t)
	assert.Equal(t, "default", s.Namespace())

	c, err := client.Dial(client.Options{
		HostPort:  s.HostPort(),
		Namespace: s.Namespace(),
		Logger:    sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)),
	})
	require.NoError(t, err)
	defer c.Close()
	const queue = "devserver-test"
	w := worker.New(c, queue, worker.Options{})
	w.RegisterWorkflow(greet)
	w.RegisterActivity(hello)
	require.NoError(t, w.Start())
	defer w.Stop()

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: queue}, greet, "troupe")
	require.NoError(t, err)
	var got string
	require.NoError(t, run.Get(ctx, &got))
	assert.Equal(t, "hello, troupe", got)
	t.Logf("the server's resident memory after one workflow: %d KiB", residentKB(t, s.Pid()))

	w.Stop()
	c.Close()
	require.NoError(t, s.Stop())
	assert.True(t, errors.Is(syscall.Kill(s.Pid(), 0), syscall.ESRCH), "the server's process %d is still there after Stop", s.Pid())
	assert.True(t, errors.Is(syscall.Kill(-s.Pid(), 0), syscall.ESRCH), "a process of the server's group %d is still there after Stop", s.Pid())
}

// BenchmarkIntegrationDevServerStart measures what a test pays for a dev
// server: the time from Launch to the server serving, and the server's
// resident memory once it serves (VmRSS, from /proc, on Linux).
func BenchmarkIntegrationDevServerStart(b *testing.B) {
	bin := os.Getenv(devserver.BinEnv)
	if bin == "" {
		b.Skip(devserver.BinEnv + " is not set: `make integration` builds the Temporal CLI and sets it")
	}
	var rssKB int
	for b.Loop() {
		ctx, cancel := context.WithTimeout(b.Context(), devserver.StartTimeout)
		s, err := devserver.Launch(ctx, devserver.Options{Bin: bin, Dir: b.TempDir()})
		cancel()
		require.NoError(b, err)
		b.StopTimer()
		rssKB = max(rssKB, residentKB(b, s.Pid()))
		require.NoError(b, s.Stop())
		b.StartTimer()
	}
	b.ReportMetric(float64(rssKB)/1024, "MiB-rss")
}

// residentKB is a process's resident set size in KiB, or 0 where /proc
// does not say.
func residentKB(tb testing.TB, pid int) int {
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			require.NoError(tb, err)
			return kb
		}
	}
	return 0
}
