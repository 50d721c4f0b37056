package workspace_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/troupe-dev/troupe/builtin/process"
)

// Every git call is a process whose pipes goroutines read: none may
// outlive the call. The test binary is also the process that Prune's test
// kills (see runKilledOpener), and the other worker of the durable
// workspaces' tests (see runDurableHelper).
func TestMain(m *testing.M) {
	process.ServeIfKeeper() // commands run under a keeper: this binary
	// Keepers are this race-built binary: none sleeps a second as it
	// exits, which every Close would wait for.
	os.Setenv("GORACE", "atexit_sleep_ms=0")
	if os.Getenv(killedOpenerEnv) != "" {
		runKilledOpener()
		return
	}
	if os.Getenv(durableHelperEnv) != "" {
		runDurableHelper()
		return
	}
	goleak.VerifyTestMain(m)
}
