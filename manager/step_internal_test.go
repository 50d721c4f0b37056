package manager

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/troupe-dev/troupe/agenttypes"
)

// Two siblings' answers are charged at the same moment, and together
// they take their parent past its budget: only the one charged second
// crossed the limit, so only it is blamed, however the two interleave.
func TestOnlyTheCallThatCrossesABudgetIsBlamed(t *testing.T) {
	m := &Manager{}
	for range 2000 {
		parent := &Agent{m: m, id: "parent", budget: agenttypes.Budget{MaxTokens: 3000}}
		parent.root = parent
		children := []*Agent{
			{m: m, id: "c1", parent: parent, root: parent},
			{m: m, id: "c2", parent: parent, root: parent},
		}
		parent.charge(Usage{InputTokens: 87})
		crossed := make([]treeLimit, len(children))
		var start, done sync.WaitGroup
		start.Add(1)
		for i, c := range children {
			done.Add(1)
			go func() {
				defer done.Done()
				start.Wait()
				_, crossed[i] = c.chargeCall(Usage{InputTokens: 1000, OutputTokens: 500}, &holding{})
			}()
		}
		start.Done()
		done.Wait()
		blamed := 0
		for _, x := range crossed {
			if x.agent != nil {
				blamed++
				assert.Same(t, parent, x.agent)
				assert.Equal(t, -87, x.left, "the call that crossed went 87 tokens past")
			}
		}
		if !assert.Equal(t, 1, blamed, "one answer crossed the parent's limit") {
			return
		}
	}
}
