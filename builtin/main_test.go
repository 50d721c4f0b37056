package builtin_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/troupe-dev/troupe/builtin/process"
)

// Agents, tool calls and commands start goroutines and processes: none
// may outlive a test. Commands run under a keeper: this binary.
func TestMain(m *testing.M) {
	process.ServeIfKeeper()
	// Keepers are this race-built binary: none sleeps a second as it
	// exits, which every Close would wait for.
	os.Setenv("GORACE", "atexit_sleep_ms=0")
	goleak.VerifyTestMain(m)
}
