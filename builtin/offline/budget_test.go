package offline_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin"
	"github.com/troupe-dev/troupe/builtin/models"
	"github.com/troupe-dev/troupe/builtin/offline"
	"github.com/troupe-dev/troupe/manager"
)

var shopRepo = filepath.Join("..", "..", "testdata", "repos", "shop")

// newOfflineManager is a manager with the builtin types and tools, the
// offline model by default, and the tools of extra in place of the
// builtin tools of the same name.
func newOfflineManager(t *testing.T, extra ...agenttypes.Tool) *manager.Manager {
	t.Helper()
	reg := agenttypes.NewRegistry()
	replaced := make(map[string]bool)
	for _, tool := range extra {
		replaced[tool.Spec().Name] = true
		require.NoError(t, reg.RegisterTool(tool))
	}
	for _, tool := range builtin.Tools() {
		if !replaced[tool.Spec().Name] {
			require.NoError(t, reg.RegisterTool(tool))
		}
	}
	for _, typ := range builtin.Types() {
		require.NoError(t, reg.RegisterType(typ))
	}
	mgr, err := manager.New(manager.Config{Registry: reg, Models: models.Resolver{}, DefaultModel: models.Offline})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, mgr.Close(context.Background())) })
	return mgr
}

func explore(t *testing.T, mgr *manager.Manager, req manager.SpawnRequest) manager.Result {
	t.Helper()
	req.Type, req.Dir = "explore", shopRepo
	a, err := mgr.Spawn(context.Background(), req)
	require.NoError(t, err)
	res, err := a.Wait(context.Background())
	require.NoError(t, err)
	return res
}

// TestBudgetedRunsStillAnswer: a run of the explore agent with a budget
// too small for the whole search (three tool calls, two turns, 2000
// tokens) fits its search to it and answers with findings, the right
// file first, within the budget.
func TestBudgetedRunsStillAnswer(t *testing.T) {
	mgr := newOfflineManager(t)
	for _, tt := range []struct {
		name   string
		budget agenttypes.Budget
	}{
		{"three tool calls", agenttypes.Budget{MaxToolCalls: 3}},
		{"one tool call", agenttypes.Budget{MaxToolCalls: 1}},
		{"two turns", agenttypes.Budget{MaxTurns: 2}},
		{"2000 tokens", agenttypes.Budget{MaxTokens: 2000}},
		{"4000 tokens", agenttypes.Budget{MaxTokens: 4000}},
		{"three turns, five tool calls and 8000 tokens", agenttypes.Budget{MaxTurns: 3, MaxToolCalls: 5, MaxTokens: 8000}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := explore(t, mgr, manager.SpawnRequest{Task: "where is the discount applied?", Budget: tt.budget})
			require.Equal(t, manager.Completed, res.State, "%s: %s\n%s", res.Reason, res.Error, res.Output)
			assert.False(t, res.Partial)
			assert.True(t, strings.HasPrefix(res.Output, offline.Disclaimer+"\n"), res.Output)
			findings := offline.ParseFindings(res.Output)
			require.NotEmpty(t, findings, res.Output)
			assert.Equal(t, "cart/cart.go", findings[0].Path, res.Output)
			if b := tt.budget; b.MaxToolCalls > 0 {
				assert.LessOrEqual(t, res.ToolCalls, b.MaxToolCalls)
			}
			if b := tt.budget; b.MaxTurns > 0 {
				assert.LessOrEqual(t, res.Turns, b.MaxTurns)
			}
			if b := tt.budget; b.MaxTokens > 0 {
				assert.LessOrEqual(t, res.Usage.Total(), b.MaxTokens)
				assert.Zero(t, res.TokensOverBudget)
				assert.Positive(t, res.Usage.Total(), "the tokens are spent on a smaller search")
			}
		})
	}
}

// TestARunCutShortWhileReadingKeepsTheFindingsSoFar: the turn that asks
// to read the best matches already says what the search found, so a run
// cut short while it reads returns those findings as its partial output.
func TestARunCutShortWhileReadingKeepsTheFindingsSoFar(t *testing.T) {
	reading := make(chan struct{})
	read := &agenttypes.ToolFunc{
		ToolSpec: agenttypes.ToolSpec{Name: "read", Description: "reads, until the run is cancelled",
			Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"offset":{"type":"integer"},"limit":{"type":"integer"}}}`), ReadOnly: true},
		Func: func(ctx context.Context, _ json.RawMessage) (string, error) {
			select {
			case reading <- struct{}{}:
			default:
			}
			<-ctx.Done()
			return "", ctx.Err()
		},
	}
	mgr := newOfflineManager(t, read)
	a, err := mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "explore", Dir: shopRepo, Task: "where is the discount applied?"})
	require.NoError(t, err)
	<-reading
	require.NoError(t, mgr.Cancel(a.ID()))
	res, err := a.Wait(context.Background())
	require.NoError(t, err)
	require.Equal(t, manager.Cancelled, res.State)
	assert.True(t, res.Partial)
	findings := offline.ParseFindings(res.Output)
	require.NotEmpty(t, findings, res.Output)
	assert.Equal(t, "cart/cart.go", findings[0].Path, res.Output)
}

// TestAPromptHooksWordsAreNotSearched: a type whose Prompt hook writes
// words around the task finds what the plain explore type finds; the
// hook's words are not searched for.
func TestAPromptHooksWordsAreNotSearched(t *testing.T) {
	mgr := newOfflineManager(t)
	plain := explore(t, mgr, manager.SpawnRequest{Task: "where is the discount applied?"})
	require.Equal(t, manager.Completed, plain.State, plain.Error)

	reg := agenttypes.NewRegistry()
	require.NoError(t, builtin.Register(reg))
	typ, err := reg.Type("explore")
	require.NoError(t, err)
	hooked := *typ
	hooked.Name = "house-explore"
	hooked.Hooks = &agenttypes.Hooks{Prompt: func(_ context.Context, task agenttypes.ScriptTask) (string, error) {
		return "Follow the house style: mention refunds, retries and payment gateways.\n\n" + task.Prompt +
			"\n\nThe charge module is payment/charge.go.", nil
	}}
	require.NoError(t, reg.RegisterType(hooked))
	hmgr, err := manager.New(manager.Config{Registry: reg, Models: models.Resolver{}, DefaultModel: models.Offline})
	require.NoError(t, err)
	defer func() { require.NoError(t, hmgr.Close(context.Background())) }()
	a, err := hmgr.Spawn(context.Background(), manager.SpawnRequest{Type: "house-explore", Dir: shopRepo, Task: "where is the discount applied?"})
	require.NoError(t, err)
	res, err := a.Wait(context.Background())
	require.NoError(t, err)
	require.Equal(t, manager.Completed, res.State, res.Error)
	assert.Equal(t, plain.Output, res.Output)
	assert.Equal(t, plain.ToolCalls, res.ToolCalls)
	for _, f := range offline.ParseFindings(res.Output) {
		assert.NotEqual(t, "payment/charge.go", f.Path, "a file only the hook's words name")
	}
}

// TestASplitTaskSharesItsBudgetAmongTheChildren: a task of several
// questions is handed to one child per question only when each child's
// share of the tokens and tool calls left pays for a search of its own,
// and each child gets that share, so that siblings do not spend each
// other's tool calls; else the task is searched as one. Either way the
// run answers with findings.
func TestASplitTaskSharesItsBudgetAmongTheChildren(t *testing.T) {
	mgr := newOfflineManager(t)
	task := "Three questions about the shop:\n" +
		"1. Where is the discount applied?\n" +
		"2. How are charges retried?\n" +
		"3. Where are refunds issued?"
	for _, tt := range []struct {
		name      string
		budget    agenttypes.Budget
		delegates bool
	}{
		{"eight tool calls", agenttypes.Budget{MaxToolCalls: 8}, true},
		{"three tool calls", agenttypes.Budget{MaxToolCalls: 3}, false},
		{"12000 tokens", agenttypes.Budget{MaxTokens: 12_000}, true},
		{"6000 tokens", agenttypes.Budget{MaxTokens: 6000}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := explore(t, mgr, manager.SpawnRequest{Task: task, Budget: tt.budget})
			require.Equal(t, manager.Completed, res.State, "%s: %s\n%s", res.Reason, res.Error, res.Output)
			children := mgr.List(manager.Filter{ParentID: res.ID})
			if !tt.delegates {
				assert.Empty(t, children, "the shares would pay for no search: the task is searched as one")
			} else {
				require.Len(t, children, 3)
				for _, c := range children {
					assert.Equal(t, manager.Completed, c.State, "child %s: %s", c.Label, c.Reason)
				}
			}
			var files []string
			for _, f := range offline.ParseFindings(res.Output) {
				files = append(files, f.Path)
			}
			require.NotEmpty(t, files, res.Output)
			if tt.delegates {
				assert.Contains(t, files, "cart/cart.go", res.Output)
				assert.Contains(t, files, "payment/charge.go", res.Output)
				assert.Contains(t, files, "payment/refund.go", res.Output)
			}
			if b := tt.budget; b.MaxToolCalls > 0 {
				assert.LessOrEqual(t, res.ToolCalls, b.MaxToolCalls)
			}
			if b := tt.budget; b.MaxTokens > 0 {
				assert.LessOrEqual(t, res.Usage.Total(), b.MaxTokens)
			}
		})
	}
}
