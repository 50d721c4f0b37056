//go:build integration

package devserver_test

import (
	"context"
	"errors"
	"log/slog"
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
	err := workflow.ExecuteActivity(ctx, greeting_, name).Get(ctx, &greeting)
	return greeting, err
}

func greeting_(_ context.Context, name string) (string, error) {
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
	w.RegisterActivity(greeting_)
	require.NoError(t, w.Start())
	defer w.Stop()

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: queue}, greet, "troupe")
	require.NoError(t, err)
	var got string
	require.NoError(t, run.Get(ctx, &got))
	assert.Equal(t, "hello, troupe", got)

	w.Stop()
	c.Close()
	require.NoError(t, s.Stop())
	assert.True(t, errors.Is(syscall.Kill(s.Pid(), 0), syscall.ESRCH), "the server's process %d is still there after Stop", s.Pid())
	assert.True(t, errors.Is(syscall.Kill(-s.Pid(), 0), syscall.ESRCH), "a process of the server's group %d is still there after Stop", s.Pid())
}
