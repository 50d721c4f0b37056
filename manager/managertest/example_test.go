package managertest_test

import (
	"context"
	"testing"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager/managertest"
)

// A loop that asks the model, runs the tools it asks for and answers is
// held to the same rules as the manager's own loop. Run the suite from a
// test of the package that brings the loop:
//
//	func TestMyLoop(t *testing.T) { managertest.TestLoop(t, myLoop) }
func ExampleTestLoop() {
	var t *testing.T // the test's own
	myLoop := agenttypes.LoopFunc(func(ctx context.Context, s agenttypes.Session, task string) (string, error) {
		return "", nil // ask, call tools, answer
	})
	if t != nil {
		managertest.TestLoop(t, myLoop)
	}
}
