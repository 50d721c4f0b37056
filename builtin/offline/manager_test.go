package offline_test

import (
	"context"
	"os"
	"path/filepath"
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

// TestOfflineParentDelegatesThroughTheManager runs the offline model as
// a top-level explore agent, which is offered the builtin delegate tool:
// its children are explore agents at depth 1, and its structured findings
// are theirs.
func TestOfflineParentDelegatesThroughTheManager(t *testing.T) {
	reg := agenttypes.NewRegistry()
	require.NoError(t, builtin.Register(reg))

	mgr, err := manager.New(manager.Config{Registry: reg, Models: models.Resolver{}, DefaultModel: models.Offline})
	require.NoError(t, err)
	defer func() { require.NoError(t, mgr.Close(context.Background())) }()

	shop := filepath.Join("..", "..", "testdata", "repos", "shop")
	task := "Three questions about the shop:\n" +
		"1. Where is the discount applied?\n" +
		"2. How are charges retried?\n" +
		"3. Where are refunds issued?"
	a, err := mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "explore", Task: task, Dir: shop})
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
