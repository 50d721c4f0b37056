package manager_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
)

func TestTranscriptsAreInSeqOrder(t *testing.T) {
	dir := t.TempDir()
	steps := make([]scripted.Step, 4)
	for i := range 3 {
		var calls []scripted.Call
		for j := range 8 {
			calls = append(calls, scripted.Call{Name: "echo", Args: fmt.Sprintf(`{"text":"%d-%d"}`, i, j)})
		}
		steps[i] = scripted.Step{Text: "working", Calls: calls}
	}
	steps[3] = scripted.Step{Text: "done"}
	f := newFixture(t, scripted.New(steps...).WithoutRecording(), func(c *manager.Config) {
		c.TranscriptDir = dir
		c.ToolConcurrency = 8
		c.MaxConcurrent = 16
	})
	sub := f.mgr.Subscribe() // a subscriber makes numbering and queueing slower, widening any gap
	go func() {
		for range sub.C() {
		}
	}()
	var agents []string
	for range 16 {
		a, err := f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "t"})
		require.NoError(t, err)
		agents = append(agents, a.ID())
	}
	results, err := f.mgr.WaitAll(context.Background(), agents...)
	require.NoError(t, err)
	for _, r := range results {
		require.Equal(t, manager.Completed, r.State)
		events := agentEvents(t, r.Transcript, r.ID)
		require.Len(t, events, 2+3*(1+8+8)+1+2)
		for i := 1; i < len(events); i++ {
			require.Greater(t, events[i].Seq, events[i-1].Seq, "transcript %s line %d goes back in Seq", r.ID, i+1)
		}
	}
}

func TestFinalTextIsStoredOnce(t *testing.T) {
	// The text a run ends with is in its transcript once, in the completed
	// event: a whole answer, an answer rejected twice (the first, sent back
	// for a retry, is stored with its model call), and an answer that came
	// after the time budget.
	for name, tc := range map[string]struct {
		steps  []scripted.Step
		budget agenttypes.Budget
		typ    string
		state  manager.State
	}{
		"completed":  {steps: []scripted.Step{{Text: "the one and only final answer"}}, state: manager.Completed},
		"bad output": {steps: []scripted.Step{{Text: "not JSON, first"}, {Text: "the one and only final answer"}}, typ: "jsonout", state: manager.Failed},
		"after budget": {steps: []scripted.Step{{Func: func(context.Context, []llms.MessageContent) scripted.Step {
			time.Sleep(300 * time.Millisecond) // ignores its context
			return scripted.Step{Text: "the one and only final answer"}
		}}}, budget: agenttypes.Budget{MaxTime: 50 * time.Millisecond}, state: manager.Failed},
	} {
		t.Run(name, func(t *testing.T) {
			answer := "the one and only final answer"
			f := newFixture(t, scripted.New(tc.steps...), func(c *manager.Config) { c.TranscriptDir = t.TempDir() })
			require.NoError(t, f.reg.RegisterType(agenttypes.Type{Name: "jsonout", Description: "answers JSON", Output: agenttypes.Output{Format: agenttypes.OutputJSON}}))
			res := f.run(t, manager.SpawnRequest{Type: tc.typ, Budget: tc.budget})
			require.Equal(t, tc.state, res.State, res.Error)
			assert.Equal(t, answer, res.Output)
			events := agentEvents(t, res.Transcript, res.ID)
			n := 0
			for _, e := range events {
				n += strings.Count(e.Text, answer)
			}
			assert.Equal(t, 1, n, "the final text is in the transcript once")
			last := events[len(events)-1]
			assert.Equal(t, manager.EventCompleted, last.Kind)
			assert.Equal(t, answer, last.Text)
		})
	}
}

func TestSlowSubscriberGetsADroppedMarker(t *testing.T) {
	dir := t.TempDir()
	f := newFixture(t, loopingModel(), func(c *manager.Config) {
		c.SubscriptionBuffer = 8
		c.TranscriptDir = dir
	})
	sub := f.mgr.Subscribe() // not read until the run is over
	var called sync.WaitGroup
	called.Add(1)
	f.mgr.OnComplete(func(manager.Info) { called.Done() })
	res := f.run(t, manager.SpawnRequest{Budget: agenttypes.Budget{MaxTurns: 20}})
	called.Wait()
	require.NoError(t, f.mgr.Close(context.Background()))

	transcript, err := manager.ReadTranscript(res.Transcript)
	require.NoError(t, err)
	delivered, dropped, markers := 0, 0, 0
	var lastSeq uint64
	for e := range sub.C() {
		require.GreaterOrEqual(t, e.Seq, lastSeq, "delivery stays in order around the gap")
		lastSeq = e.Seq
		if e.Kind == manager.EventDropped {
			markers++
			dropped += e.Dropped
			continue
		}
		delivered++
	}
	assert.LessOrEqual(t, delivered, 2*8+64, "a slow reader holds a bounded number of events")
	// The pump may fall behind more than once before the channel fills,
	// so there may be more than one gap, each with its marker.
	assert.GreaterOrEqual(t, markers, 1)
	assert.Equal(t, len(transcript), delivered+dropped, "every event is either delivered or counted; the transcript has them all")
}

// panickingHandler is a log handler that panics on every record.
type panickingHandler struct{}

func (panickingHandler) Enabled(context.Context, slog.Level) bool  { return true }
func (panickingHandler) Handle(context.Context, slog.Record) error { panic("log handler exploded") }
func (h panickingHandler) WithAttrs([]slog.Attr) slog.Handler      { return h }
func (h panickingHandler) WithGroup(string) slog.Handler           { return h }

func TestPanickingLoggerAndCallbackDoNotHangWaiters(t *testing.T) {
	// A transcript directory that cannot be made makes the manager log
	// while the agent ends; both the logger and the callback panic.
	blocker := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o600))
	f := newFixture(t, scripted.New(scripted.Step{Text: "done"}), func(c *manager.Config) {
		c.Logger = slog.New(panickingHandler{})
		c.TranscriptDir = filepath.Join(blocker, "runs")
	})
	f.mgr.OnComplete(func(manager.Info) { panic("callback exploded") })
	res := f.run(t, manager.SpawnRequest{})
	assert.Equal(t, manager.Completed, res.State)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, f.mgr.Close(ctx), "Close returns though user code panicked")
}

func TestQueueFullIsReportedWithoutARace(t *testing.T) {
	f := newFixture(t, scripted.New(scripted.Step{Text: "ok"}).WithoutRecording(), func(c *manager.Config) {
		c.MaxConcurrent = 1
		c.MaxQueue = 1
	})
	var wg sync.WaitGroup
	var full sync.Map
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				a, err := f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "t"})
				if errors.Is(err, manager.ErrQueueFull) {
					full.Store(g, err.Error())
					continue
				}
				if err == nil {
					_, _ = a.Wait(context.Background())
				}
			}
		}()
	}
	wg.Wait()
	full.Range(func(_, v any) bool {
		assert.Contains(t, v.(string), "1 agents are pending")
		return true
	})
}

func TestReloadingTypesDoesNotGrowTheManager(t *testing.T) {
	model := scripted.New(scripted.Step{Text: "ok"}).WithoutRecording()
	f := newFixture(t, model, nil)
	for i := range 200 {
		require.NoError(t, f.reg.SetFileTypes([]agenttypes.Type{{
			Name: "reloaded", Description: fmt.Sprint("version ", i), Prompt: "You are {{.Type}}.", Tools: []string{"echo"},
		}}))
		f.run(t, manager.SpawnRequest{Type: "reloaded"})
	}
	assert.LessOrEqual(t, f.mgr.SetupCount(), 2, "one setup per type name, not one per reload")
}

func TestPromptTemplateFailureIsItsOwnReason(t *testing.T) {
	f := newFixture(t, scripted.New(scripted.Step{Text: "never"}), nil)
	// Two tools, and the prompt reads a third: an error only rendering
	// can find.
	require.NoError(t, f.reg.RegisterType(agenttypes.Type{Name: "indexer", Description: "d", Prompt: "Third tool: {{index .Tools 2}}", Tools: []string{"echo", "secret"}}))
	res := f.run(t, manager.SpawnRequest{Type: "indexer"})
	assert.Equal(t, manager.Failed, res.State)
	assert.Equal(t, manager.ReasonPrompt, res.Reason)
	assert.ErrorIs(t, res.Err, agenttypes.ErrPromptTemplate)
	assert.Empty(t, f.model.Requests(), "no model call is made without a prompt")
}

func TestPromptThatRendersTooLargeFailsAtRunTime(t *testing.T) {
	var tools []agenttypes.Tool
	for i := range 30 {
		tools = append(tools, echoTool(fmt.Sprint("t", i)))
	}
	f := newFixture(t, scripted.New(scripted.Step{Text: "never"}), nil, tools...)
	line := strings.Repeat("x", 400)
	require.NoError(t, f.reg.RegisterType(agenttypes.Type{Name: "wide", Description: "d",
		Prompt: "{{range .Tools}}{{range $.Tools}}" + line + "{{end}}{{end}}", Tools: f.typeTools(t)}))
	res := f.run(t, manager.SpawnRequest{Type: "wide"})
	assert.Equal(t, manager.ReasonPrompt, res.Reason)
	assert.Contains(t, res.Error, "passes 262144 bytes")
}

func (f *fixture) typeTools(t *testing.T) []string {
	typ, err := f.reg.Type("worker")
	require.NoError(t, err)
	return typ.Tools
}

var _ llms.Model = countingModel{}

// agentEvents reads the events of one agent from its manager's transcript.
func agentEvents(t *testing.T, path, id string) []manager.Event {
	t.Helper()
	all, err := manager.ReadTranscript(path)
	require.NoError(t, err)
	var out []manager.Event
	for _, e := range all {
		if e.AgentID == id {
			out = append(out, e)
		}
	}
	return out
}
