package manager_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
)

// The rules for a model call and a tool call are the same whoever makes
// it: the manager's own loop, or a type's own loop through its Session.
// Each case below runs once for each kind of loop and must come out the
// same.

// loopKinds are the ways an agent's turns are driven: the manager's own
// loop (no Loop), and a type's own loop (askThenAct, which does what the
// manager's loop does, through the Session).
var loopKinds = map[string]agenttypes.Loop{
	"the manager's loop": nil,
	"a type's own loop":  agenttypes.LoopFunc(askThenAct),
}

// kindFixture registers type "subject" with the echo tool (and extra),
// the given hooks and the loop of kind.
func kindFixture(t *testing.T, loop agenttypes.Loop, model *scripted.Model, hooks *agenttypes.Hooks, mutate func(*manager.Config), extra ...agenttypes.Tool) *fixture {
	t.Helper()
	f := newFixture(t, model, mutate, extra...)
	tools := []string{"echo"}
	for _, e := range extra {
		tools = append(tools, e.Spec().Name)
	}
	require.NoError(t, f.reg.RegisterType(agenttypes.Type{
		Name: "subject", Description: "under test", Prompt: "You are under test.", Tools: tools, Loop: loop, Hooks: hooks,
	}))
	return f
}

func TestEveryLoopKindReportsItsEventsInTheStateTheAgentIsIn(t *testing.T) {
	for kind, loop := range loopKinds {
		t.Run(kind, func(t *testing.T) {
			model := scripted.New(
				scripted.Step{Calls: []scripted.Call{{Name: "echo", Args: `{"text":"hi"}`}}},
				scripted.Step{Text: "done"},
			)
			dir := t.TempDir()
			f := kindFixture(t, loop, model, nil, func(c *manager.Config) { c.TranscriptDir = dir })
			res := f.run(t, manager.SpawnRequest{Type: "subject"})
			require.Equal(t, manager.Completed, res.State, res.Error)
			events, err := manager.ReadTranscript(res.Transcript)
			require.NoError(t, err)
			var kinds []manager.EventKind
			for _, e := range events {
				kinds = append(kinds, e.Kind)
				line, err := json.Marshal(e)
				require.NoError(t, err)
				switch e.Kind {
				case manager.EventState:
					assert.NotEqual(t, e.From, e.State, "a state event is a move: %s", line)
				case manager.EventCompleted:
					assert.Equal(t, manager.Completed, e.State, "%s", line)
					assert.Equal(t, manager.Running, e.From, "completed says where it came from: %s", line)
				case manager.EventSpawned:
					assert.Equal(t, manager.Pending, e.State, "%s", line)
				default:
					// Events that are no move of the lifecycle say nothing
					// about it, rather than "pending".
					assert.NotContains(t, string(line), `"state"`, "%s", line)
					assert.NotContains(t, string(line), `"from"`, "%s", line)
				}
			}
			assert.Equal(t, []manager.EventKind{
				manager.EventSpawned, manager.EventState, manager.EventModelCall, manager.EventToolCall,
				manager.EventToolResult, manager.EventModelCall, manager.EventState, manager.EventCompleted,
			}, kinds)
		})
	}
}
