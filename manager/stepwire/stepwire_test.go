package stepwire_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"
	"go.uber.org/goleak"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
	"github.com/troupe-dev/troupe/manager/stepwire"
	"github.com/troupe-dev/troupe/sdk/fault"
)

// helperEnv makes the test binary a helper that serves one run with
// ServeRun on a backend that plays helperBackend.
const helperEnv = "STEPWIRE_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		err := stepwire.ServeRun(context.Background(), os.Stdin, os.Stdout, helperBackend{})
		if err != nil {
			os.Stderr.WriteString(err.Error())
			os.Exit(1)
		}
		if os.Getenv("STEPWIRE_TEST_LINGER") != "" {
			signal.Ignore(os.Interrupt)
			select {} // a helper that does not exit once its run is over
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// helperBackend publishes one event of the run and one of a child, then
// completes the run, or, for the task "wait", waits for its cancel.
type helperBackend struct{}

func (helperBackend) Run(ctx context.Context, r manager.RemoteRun) (manager.RemoteOutcome, error) {
	r.Publish(manager.Event{Kind: manager.EventModelCall, Turn: 1, Text: "thinking about " + r.Task})
	r.Publish(manager.Event{Kind: manager.EventSpawned, AgentID: "child", ParentID: r.ID, Depth: 1, State: manager.Pending})
	if r.Task == "wait" {
		<-ctx.Done()
		return manager.RemoteOutcome{State: manager.Cancelled, Reason: manager.ReasonCancelled, Error: "agent cancelled"}, nil
	}
	return manager.RemoteOutcome{State: manager.Completed, Reason: manager.ReasonDone, Output: "did " + r.Task,
		Data: map[string]any{"n": 1.0}, Usage: manager.Usage{InputTokens: 3, OutputTokens: 4}, Turns: 1}, nil
}

func TestMessagesReadBackWhatTheyWrote(t *testing.T) {
	conv := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "sys"),
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.TextPart("calling"),
			llms.ToolCall{ID: "c1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "grep", Arguments: `{"q":"x"}`}}}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "c1", Name: "grep", Content: "found"}}},
	}
	b, err := json.Marshal(stepwire.Messages(conv))
	require.NoError(t, err)
	var back []stepwire.Message
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, conv, stepwire.LLM(back))
}

func newManager(t *testing.T, model *scripted.Model) *manager.Manager {
	t.Helper()
	reg := agenttypes.NewRegistry()
	require.NoError(t, reg.RegisterType(agenttypes.Type{Name: "plain", Description: "answers", Prompt: "Answer."}))
	m, err := manager.New(manager.Config{Logger: slog.New(slog.DiscardHandler), Registry: reg, DefaultModel: "scripted",
		Models: manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return model, nil })})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.Close(context.Background())) })
	return m
}

// pipe serves steps of m to a Client through two in-memory pipes.
func pipe(t *testing.T, m *manager.Manager) *stepwire.Client {
	t.Helper()
	reqR, reqW := io.Pipe()
	ansR, ansW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- stepwire.Serve(context.Background(), reqR, ansW, stepwire.Local{Manager: m}) }()
	c := stepwire.NewClient(ansR, reqW)
	t.Cleanup(func() {
		reqW.Close()
		require.NoError(t, <-served)
		ansW.Close()
		<-c.Done()
	})
	return c
}

func TestClientRunsStepsOnTheServersManager(t *testing.T) {
	m := newManager(t, scripted.New(scripted.Step{Text: "forty-two", InputTokens: 9, OutputTokens: 2}))
	c := pipe(t, m)
	ctx := context.Background()
	sa := manager.StepAgent{ID: "a", Type: "plain", Task: "what is it?", Dir: t.TempDir()}
	st, err := c.Start(ctx, stepwire.Input{Agent: sa})
	require.NoError(t, err)
	require.Len(t, st.Messages, 2)
	assert.Equal(t, "scripted", st.Model)
	sa.Model = st.Model
	g, err := c.Generate(ctx, stepwire.Input{Agent: sa, Messages: st.Messages})
	require.NoError(t, err)
	assert.Equal(t, "forty-two", g.Choice.Content)
	assert.Equal(t, manager.Usage{InputTokens: 9, OutputTokens: 2}, g.Usage)
	a, err := c.Answer(ctx, stepwire.Input{Agent: sa, Reply: &g})
	require.NoError(t, err)
	require.NotNil(t, a.End)
	assert.Equal(t, manager.Completed, a.End.State)
	assert.Equal(t, "forty-two", a.End.Output)
}

func TestClientStepsKeepTheirErrorClass(t *testing.T) {
	c := pipe(t, newManager(t, scripted.New()))
	_, err := c.Start(context.Background(), stepwire.Input{Agent: manager.StepAgent{ID: "a", Type: "nosuch", Task: "x"}})
	require.Error(t, err)
	assert.Equal(t, fault.NotFound, fault.CodeOf(err), "an unknown type keeps its class across the pipe: %v", err)
	assert.ErrorIs(t, err, fault.ErrNotFound)
	assert.False(t, fault.Retryable(err))
}

func TestClientCancelStopsTheServersStep(t *testing.T) {
	called, returned := make(chan struct{}), make(chan struct{})
	c := pipe(t, newManager(t, scripted.New(scripted.Step{Func: func(ctx context.Context, _ []llms.MessageContent) scripted.Step {
		close(called)
		<-ctx.Done()
		close(returned)
		return scripted.Step{Err: ctx.Err()}
	}})))
	ctx, cancel := context.WithCancel(context.Background())
	sa := manager.StepAgent{ID: "a", Type: "plain", Task: "wait", Model: "scripted", Dir: t.TempDir()}
	errc := make(chan error, 1)
	go func() {
		_, err := c.Generate(ctx, stepwire.Input{Agent: sa, Messages: stepwire.Messages([]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "wait")})})
		errc <- err
	}()
	<-called
	cancel()
	assert.ErrorIs(t, <-errc, context.Canceled)
	select {
	case <-returned: // the server's step was told, with the pipe still open
	case <-time.After(10 * time.Second):
		t.Fatal("the server's step was not cancelled")
	}
}

func helper(t *testing.T) *stepwire.Process {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	return &stepwire.Process{Path: exe, Env: []string{helperEnv + "=1", "GORACE=atexit_sleep_ms=0"}}
}

func TestProcessHandsARunToItsHelper(t *testing.T) {
	var events []manager.Event
	out, err := helper(t).Run(context.Background(), manager.RemoteRun{ID: "r1", Type: "plain", Task: "the work",
		Publish: func(e manager.Event) { events = append(events, e) }})
	require.NoError(t, err)
	assert.Equal(t, manager.Completed, out.State)
	assert.Equal(t, "did the work", out.Output)
	assert.Equal(t, map[string]any{"n": 1.0}, out.Data)
	assert.Equal(t, manager.Usage{InputTokens: 3, OutputTokens: 4}, out.Usage)
	require.Len(t, events, 2)
	assert.Equal(t, "thinking about the work", events[0].Text)
	assert.Equal(t, "child", events[1].AgentID)
}

func TestProcessCancelReachesTheHelpersRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	published := make(chan struct{}, 2)
	errc := make(chan error, 1)
	var out manager.RemoteOutcome
	go func() {
		var err error
		out, err = helper(t).Run(ctx, manager.RemoteRun{ID: "r1", Type: "plain", Task: "wait",
			Publish: func(manager.Event) { published <- struct{}{} }})
		errc <- err
	}()
	<-published // the helper is running the run
	cancel()
	select {
	case err := <-errc:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the helper did not end its run after the cancel")
	}
	assert.Equal(t, manager.Cancelled, out.State)
}

func TestProcessSaysWhenItsHelperCannotStart(t *testing.T) {
	_, err := (&stepwire.Process{Path: "/nonexistent/troupe-helper"}).Run(context.Background(), manager.RemoteRun{ID: "r"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "/nonexistent/troupe-helper")
}

func TestProcessDoesNotWaitForAHelperThatLingers(t *testing.T) {
	p := helper(t)
	p.Env = append(p.Env, "STEPWIRE_TEST_LINGER=1")
	p.CancelWait = 500 * time.Millisecond
	done := make(chan error, 1)
	go func() {
		_, err := p.Run(context.Background(), manager.RemoteRun{ID: "r", Type: "plain", Task: "the work"})
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err, "the outcome was sent; the helper lingering after it is not the run's failure")
	case <-time.After(30 * time.Second):
		t.Fatal("Run waited for a helper that lingered after its outcome")
	}
}
