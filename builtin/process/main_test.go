//go:build linux

package process_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/troupe-dev/troupe/builtin/process"
)

func TestMain(m *testing.M) {
	// Keepers are this test binary, re-executed.
	process.ServeIfKeeper()
	if os.Getenv(hostEnv) != "" {
		runHost()
		return
	}
	goleak.VerifyTestMain(m)
}
