package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gcPercent is the collector's pace now, as GOGC gives it.
func gcPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// unsetGOGC removes GOGC from the environment for the test, and puts the
// test process's pace back after it.
func unsetGOGC(t *testing.T) {
	t.Setenv("GOGC", "") // restores it after the test
	require.NoError(t, os.Unsetenv("GOGC"))
	pct := gcPercent()
	t.Cleanup(func() { debug.SetGCPercent(pct) })
}

// The first collection waits for startingHeap, and the usual pace comes
// back once it has run.
func TestTheFirstCollectionWaitsForTheStartingHeap(t *testing.T) {
	unsetGOGC(t)
	debug.SetGCPercent(100)
	paceCollector()
	assert.Equal(t, startingHeap/(4<<20)*100, gcPercent(), "the first goal is not the starting heap")
	runtime.GC()
	assert.Eventually(t, func() bool { return gcPercent() == 100 }, 10*time.Second, time.Millisecond,
		"the usual pace did not come back after the first collection")
}

// A GOGC the user set is theirs.
func TestAGOGCTheUserSetIsKept(t *testing.T) {
	unsetGOGC(t)
	t.Setenv("GOGC", "50")
	debug.SetGCPercent(50)
	paceCollector()
	assert.Equal(t, 50, gcPercent())
}

// gcTrace runs a troupe run explore on repo with the collector's trace
// on, with GOGC unset but for env, and returns the trace.
func gcTrace(t *testing.T, repo string, env ...string) string {
	t.Helper()
	cmd := exec.Command(troupeBinary(t), "run", "explore", "--repo", repo, "--model", "offline", "--progress", "none", "where is the transcript written?")
	// Without the caller's GODEBUG and GOMEMLIMIT, which would change
	// the trace or the goal.
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "GODEBUG=") || strings.HasPrefix(kv, "GOMEMLIMIT=")
	})
	cmd.Env = append(cmd.Env, "GODEBUG=gctrace=1", "TROUPE_RUNS_DIR="+t.TempDir())
	cmd.Env = append(cmd.Env, env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	return stderr.String()
}

// The command's first collection comes at startingHeap (16 MB), where
// Go's usual pace, which a user can still ask for, has it at 4 MB. A run
// explore on this project allocates far more than either.
func TestTheCommandsFirstCollectionWaitsForTheStartingHeap(t *testing.T) {
	isolate(t)
	unsetGOGC(t)
	project := filepath.Join("..", "..")
	first := regexp.MustCompile(`(?m)^gc 1 @.* (\d+) MB goal`)
	goal := func(trace string) string {
		m := first.FindStringSubmatch(trace)
		require.NotNil(t, m, "no collection in the trace:\n%s", trace)
		return m[1]
	}
	assert.Equal(t, fmt.Sprint(startingHeap>>20), goal(gcTrace(t, project)))
	assert.Equal(t, "4", goal(gcTrace(t, project, "GOGC=100")))
}

// A run explore on a small repository allocates a few MB and exits
// without a collection.
func TestASmallRunCollectsNoGarbage(t *testing.T) {
	isolate(t)
	unsetGOGC(t)
	assert.NotContains(t, gcTrace(t, shop), "gc 1 @", "the run collected garbage")
}
