package builtin_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/troupe-dev/troupe/builtin/process"
)

// Agents, tool calls and commands start goroutines and processes: none
// may outlive a test. Commands run under a keeper: this binary.
func TestMain(m *testing.M) {
	process.ServeIfKeeper()
	goleak.VerifyTestMain(m)
}
