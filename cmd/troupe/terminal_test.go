package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager"
)

var approval = manager.Approval{
	Parent:  manager.Info{ID: "0123456789abcdef", Type: "general"},
	Summary: "Spawn 3 subagents: [security] scan for vulnerab…; [correctness] …",
}

func TestApprovalWithYesApproves(t *testing.T) {
	a := &app{}
	approve := a.approver(true, nil)
	assert.NoError(t, approve(context.Background(), approval))
}

func TestApprovalWithoutTerminalRefusesWithAHint(t *testing.T) {
	a := &app{}
	err := a.approver(false, nil)(context.Background(), approval)
	require.Error(t, err)
	assert.Equal(t, "delegation needs approval: run with --yes to allow subagents without asking", err.Error())
}

func TestApprovalAsksOnTheTerminal(t *testing.T) {
	for _, tt := range []struct {
		typed string
		ok    bool
	}{
		{"y\n", true}, {"YES\r\n", true}, {" yes \n", true},
		{"n\n", false}, {"\n", false}, {"yep\n", false}, {"", false},
	} {
		t.Run(strings.TrimSpace(tt.typed), func(t *testing.T) {
			var screen bytes.Buffer
			con := newConsole(strings.NewReader(tt.typed), &screen, nil)
			err := (&app{}).approver(false, con)(context.Background(), approval)
			if tt.ok {
				assert.NoError(t, err)
			} else {
				require.Error(t, err)
			}
			assert.Contains(t, screen.String(), "general#01234567 asks: "+approval.Summary+"\nAllow? [y/N] ")
		})
	}
}

func TestApprovalRefusedWhenTheInputEnds(t *testing.T) {
	con := newConsole(strings.NewReader(""), io.Discard, nil)
	err := (&app{}).approver(false, con)(context.Background(), approval)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "run with --yes", "the parent model learns how it could be allowed")
}

// TestApprovalGivesUpWithTheAgentsContext: nobody types; the agent is
// cancelled; the approval returns rather than waiting for a line.
func TestApprovalGivesUpWithTheAgentsContext(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close() // ends the read still waiting for a line
	con := newConsole(r, io.Discard, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- (&app{}).approver(false, con)(ctx, approval) }()
	select {
	case err := <-done:
		require.Error(t, err)
		assert.Contains(t, err.Error(), "deadline exceeded")
	case <-time.After(5 * time.Second):
		t.Fatal("the approval waited past its context")
	}
}

func TestAnswersAreBoundedInSize(t *testing.T) {
	long := strings.Repeat("x", maxAnswer+1000)
	r := strings.NewReader(long + "\nsecond\n" + strings.Repeat("z", maxAnswer+maxDiscard+10))
	first := readLine(r)
	require.NoError(t, first.err)
	assert.Equal(t, strings.Repeat("x", maxAnswer), first.line, "kept up to the bound")
	assert.Equal(t, "second", readLine(r).line, "the rest of the long line was not taken for the next answer")
	third := readLine(r)
	assert.Len(t, third.line, maxAnswer)
	assert.Equal(t, 10, r.Len(), "reading stops at the bound even with no newline")
}

func TestAskUserShowsTheChildAndNumberedSuggestions(t *testing.T) {
	q := manager.QuestionInfo{
		From:     manager.Info{ID: "fedcba9876543210", Type: "explore", Label: "correctness"},
		Question: agenttypes.Question{Text: "Which edition does the crate use?", Suggestions: []string{"2018", "2021"}},
	}
	for typed, want := range map[string]string{"2\n": "2021", "1\n": "2018", "3\n": "3", "the 2024 one\n": "the 2024 one", "\n": "", "": ""} {
		var screen bytes.Buffer
		ask := (&app{}).asker(newConsole(strings.NewReader(typed), &screen, nil))
		got, err := ask(context.Background(), q)
		require.NoError(t, err)
		assert.Equal(t, want, got, "typed %q", typed)
		assert.Contains(t, screen.String(), "? [correctness] explore#fedcba98 asks: Which edition does the crate use?\n  1) 2018\n  2) 2021\n")
	}
}

func TestAskUserWithoutATerminalLeavesTheQuestionUnanswered(t *testing.T) {
	assert.Nil(t, (&app{}).asker(nil), "the manager tells the child nobody answered")
}

func TestQuestionsTakeTurns(t *testing.T) {
	// Two agents ask at once; each prompt is followed by its own answer.
	r, w := io.Pipe()
	defer w.Close()
	var screen lockedBuffer
	con := newConsole(r, &screen, nil)
	answers := make(chan string, 2)
	for _, q := range []string{"q1?", "q2?"} {
		go func() {
			a, _ := con.ask(context.Background(), q+" ")
			answers <- q + "=" + a
		}()
	}
	for range 2 {
		require.Eventually(t, func() bool { return strings.HasSuffix(screen.String(), "? ") }, 5*time.Second, time.Millisecond)
		prompt := strings.TrimSpace(screen.String())
		screen.Reset()
		_, err := io.WriteString(w, "answer to "+prompt+"\n")
		require.NoError(t, err)
	}
	got := []string{<-answers, <-answers}
	assert.ElementsMatch(t, []string{"q1?=answer to q1?", "q2?=answer to q2?"}, got)
}

type lockedBuffer struct {
	lockedWriter
	buf bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *lockedBuffer) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Reset()
}

func TestRunFlagsMaxCost(t *testing.T) {
	cmd := (&app{}).runCommand()
	require.NoError(t, cmd.ParseFlags([]string{"--max-cost", "0.25"}))
	b, err := budgetFlags(cmd, runFlags{maxCost: 0.25})
	require.NoError(t, err)
	assert.Equal(t, agenttypes.Budget{MaxCostUSD: 0.25}, b)
}

func TestSummaryShowsOwnUsageBesideTheTreesWhenThereWereChildren(t *testing.T) {
	r := manager.Result{Type: "general", State: manager.Completed, Reason: manager.ReasonDone, Model: "m", Turns: 2,
		Usage:    manager.Usage{InputTokens: 71100, OutputTokens: 3410, CostUSD: 0.05},
		OwnUsage: manager.Usage{InputTokens: 3100, OutputTokens: 420, CostUSD: 0.01}}
	below := []manager.Info{
		{Type: "explore", Label: "security", Depth: 1, State: manager.Completed, Reason: manager.ReasonDone, Turns: 3, ToolCalls: 5, Model: "m",
			OwnUsage: manager.Usage{InputTokens: 45000, OutputTokens: 2100, CostUSD: 0.03}},
		{Type: "explore", Label: "refactor", Depth: 1, State: manager.Failed, Reason: manager.ReasonBudgetTokens, Turns: 4, ToolCalls: 9, Model: "m",
			OwnUsage: manager.Usage{InputTokens: 23000, OutputTokens: 890, CostUSD: 0.01}},
	}
	out := summary(r, below)
	assert.Contains(t, out, "71100 tokens in / 3410 out, $0.0500 in all (own 3100 in / 420 out, $0.0100) · model m")
	assert.Contains(t, out, "\n  └ [security] explore completed (done) · 3 turns · 5 tool calls · 45000 in / 2100 out, $0.0300 · model m")
	assert.Contains(t, out, "\n  └ [refactor] explore failed (budget_tokens) · 4 turns · 9 tool calls · 23000 in / 890 out, $0.0100 · model m")

	r.Usage = r.OwnUsage
	assert.Contains(t, summary(r, nil), "3100 tokens in / 420 out, $0.0100 · model m", "no children: one usage")
	assert.NotContains(t, summary(r, nil), "own")
}

func TestSummarySaysWhenUsageIsEstimatedOrNotFinal(t *testing.T) {
	r := manager.Result{Type: "general", State: manager.Cancelled, Reason: manager.ReasonCancelled, Model: "m",
		Usage: manager.Usage{InputTokens: 900, OutputTokens: 10}}
	assert.NotContains(t, summary(r, nil), "estimated")
	assert.NotContains(t, summary(r, nil), "not final")
	r.Usage.Estimated, r.Unsettled = true, true
	out := summary(r, nil)
	assert.Contains(t, out, "900 tokens in / 10 out (partly estimated) (subagents still running: not final)")
}

func TestARunsRecordTakesTheSettledUsage(t *testing.T) {
	events := []manager.Event{
		{Kind: manager.EventSpawned, AgentID: "a", State: manager.Pending},
		{Kind: manager.EventCompleted, AgentID: "a", State: manager.Cancelled, Usage: manager.Usage{InputTokens: 100}},
		{Kind: manager.EventSettled, AgentID: "a", Usage: manager.Usage{InputTokens: 600}},
	}
	r, _, completed := recordOf("a", "run.jsonl", events)
	require.True(t, completed)
	assert.Equal(t, 600, r.Usage.InputTokens, "what the children spent after the agent's end is in its record")
}
