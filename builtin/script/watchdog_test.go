package script

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/sdk"
)

const busyHooks = `package hooks

import "troupe"

func Prompt(task troupe.Task) (string, error) {
	n := 0
	for i := 0; i < 1000000; i++ {
		n += i
	}
	if n < 0 {
		return "", nil
	}
	return "done", nil
}
`

// A call that used more than its CPU time fails, and retires its script
// host, even when it ended before the watchdog first looked at it: here
// the watchdog never looks (its goroutine is not started), and only the
// check as the call ends can see it.
func TestACallThatUsedItsCPUTimeFailsAsItEnds(t *testing.T) {
	s := &server{mem: 1 << 30, watch: &watchdog{mem: 1 << 30}, progs: map[string]*instance{}}
	p := newProgram(KindHooks, busyHooks)
	call := func(req *request) response {
		t.Helper()
		args, err := json.Marshal(req)
		require.NoError(t, err)
		out, err := s.tool(context.Background(), sdk.CallRequest{Args: args})
		require.NoError(t, err)
		var resp response
		require.NoError(t, json.Unmarshal([]byte(out.Text), &resp))
		return resp
	}
	loaded := call(&request{Prog: p})
	require.Empty(t, loaded.Fail)
	require.Empty(t, loaded.Compile)
	s.watch.cpu = time.Millisecond // for the call, not its load

	start, ok := processCPU()
	if !ok {
		t.Skip("no count of CPU time on this platform")
	}
	resp := call(&request{Prog: &Program{ID: p.ID, Kind: p.Kind}, Call: &Call{Fn: "Prompt", Task: &Task{Prompt: "x"}, Root: t.TempDir()}})
	used, _ := processCPU()
	require.Greater(t, used-start, 5*time.Millisecond, "the script did not use enough CPU time to test its case")
	assert.Contains(t, resp.Fail, "used more than 1ms of CPU time")
	assert.True(t, resp.Retire, "the script host is not retired")
}
