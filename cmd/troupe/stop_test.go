package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
)

func TestStopAgentDoesNotWaitForAModelThatIgnoresCancellation(t *testing.T) {
	release, entered := make(chan struct{}), make(chan struct{})
	stubborn := scripted.New(scripted.Step{Func: func(context.Context, []llms.MessageContent) scripted.Step {
		close(entered)
		<-release // ignores its context
		return scripted.Step{Text: "late"}
	}})
	reg := agenttypes.NewRegistry()
	require.NoError(t, reg.RegisterType(agenttypes.Type{Name: "w", Description: "d"}))
	mgr, err := manager.New(manager.Config{Registry: reg, DefaultModel: "m",
		Models: manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return stubborn, nil })})
	require.NoError(t, err)
	agent, err := mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "w", Task: "t"})
	require.NoError(t, err)
	<-entered

	res := stopAgent(agent, 50*time.Millisecond)
	assert.Equal(t, manager.Running, res.State, "the command reports what it has rather than waiting")
	assert.True(t, res.Partial)
	assert.Contains(t, res.Error, "had not stopped")

	close(release)
	require.NoError(t, mgr.Close(context.Background()))
}

// A manager that gave up on agents ignoring cancellation never closes its
// events: the progress display must not hold the command after that.
func TestProgressWaitEndsWithItsContext(t *testing.T) {
	for _, mode := range []progressKind{progressPlain, progressJSON, progressLive} {
		events := make(chan manager.Event) // never closed
		prog := showEvents(events, mode, io.Discard, progressOptions{every: time.Millisecond, width: func() int { return 80 }})
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		prog.wait(ctx)
		assert.ErrorIs(t, ctx.Err(), context.DeadlineExceeded, "wait returned before its context ended")
		cancel()
		close(events)
		prog.wait(context.Background())
	}
}
