package offline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin"
	"github.com/troupe-dev/troupe/builtin/models"
	"github.com/troupe-dev/troupe/manager"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// delegateTool stands in for troupe's delegate tool: it takes the
// contract's arguments, delegates through the agent tree, and answers
// with the contract's JSON result.
func delegateTool() agenttypes.Tool {
	return &agenttypes.ToolFunc{
		ToolSpec: agenttypes.ToolSpec{
			Name:        "delegate",
			Description: "Hand tasks to child agents.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"tasks":{"type":"array"}},"required":["tasks"]}`),
			ReadOnly:    true,
		},
		Func: func(ctx context.Context, args json.RawMessage) (string, error) {
			var in struct {
				Tasks []struct {
					Label, Type, Prompt string
				} `json:"tasks"`
				Concurrency int    `json:"concurrency"`
				Mode        string `json:"mode"`
				Return      string `json:"return"`
			}
			if err := json.Unmarshal(args, &in); err != nil {
				return "", err
			}
			if in.Mode != "parallel" || in.Return != "json" {
				return "", fmt.Errorf("mode %q, return %q: the offline model asks for parallel and json", in.Mode, in.Return)
			}
			req := agenttypes.DelegateRequest{Concurrency: in.Concurrency}
			for _, t := range in.Tasks {
				req.Tasks = append(req.Tasks, agenttypes.ChildTask{Label: t.Label, Type: t.Type, Prompt: t.Prompt})
			}
			resp, err := agenttypes.EnvFrom(ctx).Tree.Delegate(ctx, req)
			if err != nil {
				return "", err
			}
			out := struct {
				Completed int                      `json:"completed"`
				Partial   int                      `json:"partial"`
				Failed    int                      `json:"failed"`
				Total     int                      `json:"total"`
				Results   []agenttypes.ChildResult `json:"results"`
			}{Total: len(resp.Results), Results: resp.Results}
			for _, r := range resp.Results {
				switch r.Status {
				case agenttypes.ChildOK:
					out.Completed++
				case agenttypes.ChildPartial:
					out.Partial++
				default:
					out.Failed++
				}
			}
			b, err := json.Marshal(out)
			return string(b), err
		},
	}
}

// TestOfflineParentDelegatesThroughTheManager runs the offline model as
// a parent agent whose type offers delegate: its children are explore
// agents at depth 1, and its structured findings are theirs.
func TestOfflineParentDelegatesThroughTheManager(t *testing.T) {
	reg := agenttypes.NewRegistry()
	require.NoError(t, builtin.Register(reg))
	require.NoError(t, reg.RegisterTool(delegateTool()))
	lead := builtin.Types()[0]
	require.Equal(t, "explore", lead.Name)
	lead.Name = "explore-lead"
	lead.Tools = append(slices.Clone(lead.Tools), "delegate")
	require.NoError(t, reg.RegisterType(lead))

	mgr, err := manager.New(manager.Config{Registry: reg, Models: models.Resolver{}, DefaultModel: models.Offline})
	require.NoError(t, err)
	defer func() { require.NoError(t, mgr.Close(context.Background())) }()

	shop := filepath.Join("..", "..", "testdata", "repos", "shop")
	task := "Three questions about the shop:\n" +
		"1. Where is the discount applied?\n" +
		"2. How are charges retried?\n" +
		"3. Where are refunds issued?"
	a, err := mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "explore-lead", Task: task, Dir: shop})
	require.NoError(t, err)
	res, err := a.Wait(context.Background())
	require.NoError(t, err)
	require.Equal(t, manager.Completed, res.State, res.Error)

	first, _, _ := strings.Cut(res.Output, "\n")
	assert.Contains(t, first, "mechanically into 3 subtasks")
	assert.Equal(t, 1, res.ToolCalls, "the parent's one tool call is delegate")

	children := mgr.List(manager.Filter{})
	var depth1 int
	for _, c := range children {
		if c.ParentID == a.ID() {
			depth1++
			assert.Equal(t, "explore", c.Type)
			assert.Equal(t, 1, c.Depth)
			assert.Greater(t, c.ToolCalls, 1, "a child searches itself")
		}
	}
	assert.Equal(t, 3, depth1, "one child per question")

	findings, ok := res.Data.(builtin.Findings)
	require.True(t, ok, "data holds findings, got %T", res.Data)
	var files []string
	for _, f := range findings.Findings {
		_, err := os.Stat(filepath.Join(shop, filepath.FromSlash(f.Path)))
		require.NoError(t, err, "finding %s:%d is relative to the repository", f.Path, f.Line)
		files = append(files, f.Path)
	}
	for _, want := range []string{"cart/cart.go", "payment/charge.go", "payment/refund.go"} {
		assert.Contains(t, files, want)
	}
}
