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
	// Keepers are this race-built binary: none sleeps a second as it
	// exits, which every Close would wait for.
	os.Setenv("GORACE", "atexit_sleep_ms=0")
	if os.Getenv(hostEnv) != "" {
		runHost()
		return
	}
	if os.Getenv(runHostEnv) != "" {
		runRunHost()
		return
	}
	if os.Getenv(ttyHostEnv) != "" {
		runTTYHost()
	}
	if os.Getenv(helperEnv) != "" {
		os.Exit(runHelper(os.Args[1:]))
	}
	goleak.VerifyTestMain(m)
}
