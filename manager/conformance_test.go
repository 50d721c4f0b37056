package manager_test

import (
	"testing"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager/managertest"
)

// loopKinds are the ways an agent's turns are driven in this package: the
// manager's own loop (no Loop), and a type's own loop (askThenAct, which
// does what the manager's loop does, through the Session). The plugins
// package runs the same suite on a plugin's loop.
var loopKinds = map[string]agenttypes.Loop{
	"the manager's loop": nil,
	"a type's own loop":  agenttypes.LoopFunc(askThenAct),
}

func TestEveryLoopKindKeepsTheRules(t *testing.T) {
	for kind, loop := range loopKinds {
		t.Run(kind, func(t *testing.T) { managertest.TestLoop(t, loop) })
	}
}
