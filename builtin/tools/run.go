package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/troupe-dev/troupe/agenttypes"
)

// runOutputCap bounds the output run shows, whatever the workspace
// gives: its head and its tail (where a failing test says why), with a
// marker between.
const (
	runOutputCap  = 64 << 10
	runOutputHead = 16 << 10
)

const runDescription = `Run a command in your workspace (your own copy of the project), such as the project's tests or build.

The command is split into words as a shell would split a simple command, but no shell runs it: pipes, redirections, variables and ; are refused; quote an argument that holds such characters. It must start with one of the command prefixes your agent type allows. It runs with a scrubbed environment, without the network unless your type allows it, and in a process group killed whole when it runs past its time limit. timeout (seconds) may ask for less time than your type's limit, never more.

The result is the exit status, the output (standard output and error together; a long one is cut to its head and tail) and which restrictions applied. A command that fails is still a result: read its output.`

const runParams = `{
  "type": "object",
  "properties": {
    "command": {"type": "string", "minLength": 1, "description": "The command line, e.g. \"go test ./...\"."},
    "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": 1800, "description": "Seconds the command may run, e.g. 90. Default and most: your agent type's limit (2 minutes unless it says)."}
  },
  "required": ["command"],
  "additionalProperties": false
}`

// Run returns the run tool: it runs an allow-listed command in the
// calling agent's workspace, through agenttypes.Workspace.Run. See the
// package documentation.
func Run() agenttypes.Tool {
	return newWorkspaceTool("run", runDescription, runParams, runCommand)
}

type runArgs struct {
	Command string   `json:"command"`
	Timeout *float64 `json:"timeout"`
}

func runCommand(ctx context.Context, env *agenttypes.Env, raw json.RawMessage) (string, error) {
	var a runArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	if strings.TrimSpace(a.Command) == "" {
		return "", errors.New(`missing "command": give the command line to run, such as "go test ./..."`)
	}
	var timeout time.Duration
	if a.Timeout != nil {
		s := *a.Timeout
		if math.IsNaN(s) || s <= 0 || s > agenttypes.MaxRunTimeout.Seconds() {
			return "", fmt.Errorf("timeout is %v; give the seconds the command may run, more than 0 and at most %v, or leave it out for your type's limit", s, agenttypes.MaxRunTimeout.Seconds())
		}
		timeout = time.Duration(s * float64(time.Second))
	}
	args, err := agenttypes.SplitCommand(a.Command)
	if err != nil {
		return "", err
	}
	if len(args) == 0 || strings.TrimSpace(args[0]) == "" {
		return "", errors.New(`the command does not start with the name of a program; give a command line such as "go test ./..."`)
	}
	res, err := env.Workspace.Run(ctx, agenttypes.Command{Args: args, Timeout: timeout})
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return "", ctxErr
		}
		return "", err
	}
	return renderRun(a.Command, res), nil
}

// renderRun writes how a command went: its status line, the restrictions
// that applied, then its output.
func renderRun(command string, res agenttypes.CommandResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "$ %s\n", oneLine(command))
	switch {
	case res.TimedOut:
		fmt.Fprintf(&b, "timed out after %s, killed with everything it started\n", roundDuration(res.Duration))
	case res.ExitCode < 0:
		fmt.Fprintf(&b, "killed after %s, before it exited\n", roundDuration(res.Duration))
	default:
		fmt.Fprintf(&b, "exit status %d after %s\n", res.ExitCode, roundDuration(res.Duration))
	}
	b.WriteString(confinementLine(res.Confined))
	out := capOutput(res.Output)
	if out == "" {
		b.WriteString("\n(no output)")
		return b.String()
	}
	b.WriteString("\noutput:\n")
	b.WriteString(strings.TrimSuffix(out, "\n"))
	return b.String()
}

// confinementLine says which of the restrictions the platform applied.
func confinementLine(c agenttypes.Confinement) string {
	network := "no network, nor this machine's sockets"
	if !c.Network {
		network = "the network and this machine's sockets may be reachable"
	}
	writes := "writes confined to the workspace and a private temporary directory"
	if !c.Writes {
		writes = "writes not confined"
	}
	return "confinement: " + network + "; " + writes
}

// oneLine shows a command on one line.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
	if len(s) > nearLineCut {
		cut := nearLineCut
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + " [...]"
	}
	return s
}

// capOutput makes a command's output valid UTF-8 and bounds it, keeping
// its head and its tail.
func capOutput(out string) string {
	out = strings.ToValidUTF8(out, "\uFFFD")
	if len(out) <= runOutputCap {
		return out
	}
	head := runOutputHead
	for head > 0 && !utf8.RuneStart(out[head]) {
		head--
	}
	tail := len(out) - (runOutputCap - runOutputHead)
	for tail < len(out) && !utf8.RuneStart(out[tail]) {
		tail++
	}
	return out[:head] + fmt.Sprintf("\n[... %s of output cut ...]\n", size(tail-head)) + out[tail:]
}

// roundDuration shows d to a tenth of a second, or to the millisecond
// when shorter than one.
func roundDuration(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}
