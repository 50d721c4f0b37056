package workspace_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// Every git call is a process whose pipes goroutines read: none may
// outlive the call. The test binary is also the process that Prune's test
// kills (see runKilledOpener).
func TestMain(m *testing.M) {
	if os.Getenv(killedOpenerEnv) != "" {
		runKilledOpener()
		return
	}
	goleak.VerifyTestMain(m)
}
