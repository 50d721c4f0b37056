package mcpserver_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
)

// askingScript: the lead delegates to a worker, which asks its parent a
// question the lead's model passes on to the user; the worker reports the
// answer it got, and the lead the worker's report.
func askingScript() *scripted.Model {
	step := scripted.Step{Func: func(_ context.Context, msgs []llms.MessageContent) scripted.Step {
		system, task := scripted.Text(msgs[0]), scripted.Text(msgs[1])
		results := scripted.ToolResults(msgs)
		switch {
		case strings.Contains(system, "ESCALATE"):
			return scripted.Step{Text: "ESCALATE"}
		case strings.Contains(task, "CHILD") && len(results) == 0:
			return scripted.Step{Calls: []scripted.Call{{Name: "ask_parent", Args: `{"question":"Which colour?","suggestions":["red","blue"]}`}}}
		case strings.Contains(task, "CHILD"):
			return scripted.Step{Text: "child heard: " + results[0].Content}
		case len(results) == 0:
			return scripted.Step{Calls: []scripted.Call{{Name: "delegate", Args: `{"tasks":[{"label":"w1","type":"worker","prompt":"CHILD: paint"}]}`}}}
		default:
			return scripted.Step{Text: "lead finished: " + results[len(results)-1].Content}
		}
	}}
	return scripted.New(step, step, step)
}

// A child's question for the user reaches the client as an elicitation,
// whether the client's protocol takes the server's requests while a call
// runs (2025-11-25) or takes questions in the call's results and calls
// again with the answer (2026-07-28, the latest).
func TestAChildsQuestionReachesTheClientAsAnElicitation(t *testing.T) {
	for _, version := range []string{"", "2025-11-25"} {
		name := version
		if name == "" {
			name = "latest"
		}
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			var asked []string
			f := serve(t, askingScript(), options{version: version, client: mcpsdk.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcpsdk.ElicitRequest) (*mcpsdk.ElicitResult, error) {
					mu.Lock()
					asked = append(asked, req.Params.Message)
					mu.Unlock()
					return &mcpsdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": "blue, please"}}, nil
				},
			}})
			res := f.call(t, "lead", map[string]any{"task": "paint the shed"})
			require.False(t, res.IsError, text(res))
			assert.Contains(t, text(res), "blue, please", "the user's answer reached the child and its report the lead")
			mu.Lock()
			defer mu.Unlock()
			require.Len(t, asked, 1)
			assert.Contains(t, asked[0], "[w1] worker subagent asks: Which colour?")
		})
	}
}

func TestAQuestionIsAnsweredNoAnswerWhenTheClientTakesNoElicitation(t *testing.T) {
	f := serve(t, askingScript(), options{})
	res := f.call(t, "lead", map[string]any{"task": "paint the shed"})
	require.False(t, res.IsError, text(res))
	assert.Contains(t, text(res), "No answer came", "the child was told nobody answered, and went on")
}

func TestAQuestionTheUserDeclinesIsAnsweredNoAnswer(t *testing.T) {
	f := serve(t, askingScript(), options{client: mcpsdk.ClientOptions{
		ElicitationHandler: func(context.Context, *mcpsdk.ElicitRequest) (*mcpsdk.ElicitResult, error) {
			return &mcpsdk.ElicitResult{Action: "decline"}, nil
		},
	}})
	res := f.call(t, "lead", map[string]any{"task": "paint the shed"})
	require.False(t, res.IsError, text(res))
	assert.Contains(t, text(res), "No answer came")
}

func TestARequestStateTheServerDidNotGiveIsRefused(t *testing.T) {
	f := serve(t, scripted.New(scripted.Step{Text: "ran"}), options{})
	res, err := f.client.CallTool(context.Background(), &mcpsdk.CallToolParams{
		Name: "worker", Arguments: map[string]any{"task": "t"}, RequestState: "0000.AAAA",
	})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Contains(t, text(res), "requestState is not one this server gave")
	assert.Empty(t, f.mgr.List(manager.Filter{}), "nothing was spawned")
}

// A client that cancels its call cancels the agent and its subtree.
func TestCancellingACallCancelsTheAgentAndItsSubagents(t *testing.T) {
	childWaits := make(chan struct{})
	var once sync.Once
	step := scripted.Step{Func: func(_ context.Context, msgs []llms.MessageContent) scripted.Step {
		if strings.Contains(scripted.Text(msgs[1]), "CHILD") {
			once.Do(func() { close(childWaits) })
			return scripted.Step{Block: true}
		}
		return scripted.Step{Calls: []scripted.Call{{Name: "delegate", Args: `{"tasks":[{"label":"w1","type":"worker","prompt":"CHILD: wait"}]}`}}}
	}}
	f := serve(t, scripted.New(step, step), options{})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := f.client.CallTool(ctx, &mcpsdk.CallToolParams{Name: "lead", Arguments: map[string]any{"task": "wait below"}})
		errc <- err
	}()
	<-childWaits
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)

	agents := f.mgr.List(manager.Filter{})
	require.Len(t, agents, 2)
	for _, a := range agents {
		wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
		res, err := f.mgr.Wait(wctx, a.ID)
		wcancel()
		require.NoError(t, err, "%s ended", a.Type)
		assert.Equal(t, manager.Cancelled, res.State, a.Type)
	}
}
