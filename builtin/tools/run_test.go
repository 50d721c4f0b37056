package tools_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/tools"
)

func TestRun(t *testing.T) {
	confined := agenttypes.Confinement{Network: true, Writes: true}
	tests := []struct {
		name, args string
		result     agenttypes.CommandResult
		wantCmd    agenttypes.Command
		want       string
	}{
		{
			"passed", `{"command":"go test ./..."}`,
			agenttypes.CommandResult{ExitCode: 0, Output: "ok  \texample.com/cart\t0.01s\n", Duration: 1234 * time.Millisecond, Confined: confined},
			agenttypes.Command{Args: []string{"go", "test", "./..."}},
			"$ go test ./...\nexit status 0 after 1.2s\n" +
				"confinement: no network, nor this machine's sockets; writes confined to the workspace and a private temporary directory\n" +
				"output:\nok  \texample.com/cart\t0.01s",
		},
		{
			"failed, a result not an error", `{"command":"go test ./cart","timeout":90}`,
			agenttypes.CommandResult{ExitCode: 1, Output: "--- FAIL: TestTotal\n    cart_test.go:12: got 3, want 4\nFAIL\n", Duration: 2 * time.Second, Confined: confined},
			agenttypes.Command{Args: []string{"go", "test", "./cart"}, Timeout: 90 * time.Second},
			"$ go test ./cart\nexit status 1 after 2s\n" +
				"confinement: no network, nor this machine's sockets; writes confined to the workspace and a private temporary directory\n" +
				"output:\n--- FAIL: TestTotal\n    cart_test.go:12: got 3, want 4\nFAIL",
		},
		{
			"timed out", `{"command":"make test","timeout":0.5}`,
			agenttypes.CommandResult{ExitCode: -1, TimedOut: true, Output: "building...\n", Duration: 500 * time.Millisecond},
			agenttypes.Command{Args: []string{"make", "test"}, Timeout: 500 * time.Millisecond},
			"$ make test\ntimed out after 500ms, killed with everything it started\n" +
				"confinement: the network and this machine's sockets may be reachable; writes not confined\n" +
				"output:\nbuilding...",
		},
		{
			"killed", `{"command":"go vet"}`,
			agenttypes.CommandResult{ExitCode: -1, Duration: 3 * time.Second, Confined: agenttypes.Confinement{Network: true}},
			agenttypes.Command{Args: []string{"go", "vet"}},
			"$ go vet\nkilled after 3s, before it exited\n" +
				"confinement: no network, nor this machine's sockets; writes not confined\n(no output)",
		},
		{
			"quoted words", `{"command":"go test -run 'TestA|TestB' \"./a b\""}`,
			agenttypes.CommandResult{ExitCode: 0, Confined: agenttypes.Confinement{Writes: true}},
			agenttypes.Command{Args: []string{"go", "test", "-run", "TestA|TestB", "./a b"}},
			"$ go test -run 'TestA|TestB' \"./a b\"\nexit status 0 after 0s\n" +
				"confinement: the network and this machine's sockets may be reachable; writes confined to the workspace and a private temporary directory\n(no output)",
		},
		{
			"output not UTF-8", `{"command":"cat x"}`,
			agenttypes.CommandResult{ExitCode: 0, Output: "caf\xe9\n"},
			agenttypes.Command{Args: []string{"cat", "x"}},
			"$ cat x\nexit status 0 after 0s\nconfinement: the network and this machine's sockets may be reachable; writes not confined\noutput:\ncaf\uFFFD",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := &fakeWorkspace{dir: t.TempDir(), result: tt.result}
			out, err := callWS(context.Background(), tools.Run(), ws, nil, tt.args)
			require.NoError(t, err)
			assert.Equal(t, tt.want, out)
			assert.Equal(t, []agenttypes.Command{tt.wantCmd}, ws.ran)
		})
	}
}

// Output longer than the tool's cap keeps its head and its tail, where
// a failing test says why.
func TestRunOutputTail(t *testing.T) {
	var b strings.Builder
	for i := range 20_000 {
		fmt.Fprintf(&b, "=== RUN   TestCase%05d\n", i)
	}
	b.WriteString("--- FAIL: TestLast\nFAIL\n")
	ws := &fakeWorkspace{dir: t.TempDir(), result: agenttypes.CommandResult{ExitCode: 1, Output: b.String()}}
	out, err := callWS(context.Background(), tools.Run(), ws, nil, `{"command":"go test ./..."}`)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(out), 65<<10)
	assert.Contains(t, out, "output:\n=== RUN   TestCase00000\n")
	assert.Contains(t, out, " of output cut ...]\n")
	assert.True(t, strings.HasSuffix(out, "=== RUN   TestCase19999\n--- FAIL: TestLast\nFAIL"), out[len(out)-200:])
}

// Commands the tool cannot split, and arguments it cannot take, are
// refused before the workspace is asked anything; a refusal of the
// workspace reaches the model with its message.
func TestRunErrors(t *testing.T) {
	refused := fmt.Errorf("%w: \"rm -rf /\" does not start with an allowed prefix (go test, go vet); ask for one of those", agenttypes.ErrRunRefused)
	tests := []struct {
		name, args string
		runErr     error
		want       string
		asked      bool
	}{
		{"pipe", `{"command":"go test | tee log"}`, nil, `run: command syntax: '|' is a shell operator`, false},
		{"unclosed quote", `{"command":"echo 'a"}`, nil, "run: command syntax: a single quote is not closed", false},
		{"empty", `{"command":"  "}`, nil, `run: missing "command"`, false},
		{"no program", `{"command":"'' x"}`, nil, "run: the command does not start with the name of a program", false},
		{"timeout zero", `{"command":"go test","timeout":0}`, nil, "run: timeout is 0; give the seconds the command may run, more than 0 and at most 1800", false},
		{"timeout too long", `{"command":"go test","timeout":3600}`, nil, "run: timeout is 3600", false},
		{"timeout as a string", `{"command":"go test","timeout":"90s"}`, nil, `run: argument "timeout" must be a number, not a JSON string`, false},
		{"unknown field", `{"command":"go test","shell":true}`, nil, `run: unknown argument "shell"; valid arguments are command, timeout`, false},
		{"refused by the workspace", `{"command":"rm -rf /"}`, refused, `run: command refused: "rm -rf /" does not start with an allowed prefix (go test, go vet); ask for one of those`, true},
		{"workspace failure", `{"command":"go test"}`, errors.New("go: executable file not found in $PATH"), "run: go: executable file not found in $PATH", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := &fakeWorkspace{dir: t.TempDir(), runErr: tt.runErr}
			_, err := callWS(context.Background(), tools.Run(), ws, nil, tt.args)
			require.Error(t, err)
			if tt.want != "" {
				assert.Contains(t, err.Error(), tt.want)
			}
			if tt.runErr != nil {
				assert.ErrorIs(t, err, tt.runErr)
			}
			assert.Equal(t, tt.asked, len(ws.ran) > 0)
		})
	}
}
