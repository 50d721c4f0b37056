package manager

import (
	"errors"
	"fmt"

	"github.com/troupe-dev/troupe/agenttypes"
)

// Sentinel errors callers can branch on with errors.Is.
var (
	// ErrUnknownType is returned by Spawn for a type that is not registered.
	ErrUnknownType = agenttypes.ErrUnknownType
	// ErrQueueFull is returned by Spawn when the pending queue is full.
	ErrQueueFull = errors.New("agent queue is full")
	// ErrClosed is returned by Spawn after Close.
	ErrClosed = errors.New("manager is closed")
	// ErrNotFound is returned for an agent ID the manager does not know.
	ErrNotFound = errors.New("no such agent")
	// ErrBadRequest is returned by Spawn for a request that cannot run:
	// an empty task, a missing directory, a negative budget.
	ErrBadRequest = errors.New("bad spawn request")
	// ErrModel is returned by Spawn when the model cannot be resolved or
	// does not suit the type.
	ErrModel = errors.New("model unavailable")
	// ErrDepthExceeded is returned by Spawn when a parent may not have
	// children at its depth.
	ErrDepthExceeded = errors.New("delegation depth exceeded")
	// ErrMCPServer is returned by Spawn when an MCP server the type
	// names cannot give its tools: it does not start, fails the
	// handshake, or is not trusted.
	ErrMCPServer = errors.New("MCP server unavailable")
	// ErrBudgetExceeded is wrapped by Result.Err when a budget ended a run.
	ErrBudgetExceeded = agenttypes.ErrBudgetExceeded
	// ErrPluginExited is wrapped by Result.Err when the plugin serving an
	// agent exited.
	ErrPluginExited = agenttypes.ErrPluginExited
	// ErrToolPanic is wrapped by Result.Err when a tool panicked.
	ErrToolPanic = errors.New("tool panicked")
	// ErrScript is wrapped by Result.Err when the type's script failed.
	ErrScript = agenttypes.ErrScript
	// ErrBadOutput is wrapped by Result.Err when the final answer could not
	// be parsed into the type's output format or does not match its schema.
	ErrBadOutput = agenttypes.ErrBadOutput
	// ErrWorkspace is returned by Spawn when an agent that changes files
	// cannot have a workspace of its own, and wrapped by Result.Err when
	// its work could not be recorded on its branch.
	ErrWorkspace = agenttypes.ErrWorkspace
)

// PanicError is a panic recovered at a boundary (a tool, the model, an
// output parser), with the stack of the goroutine that panicked. It is
// wrapped in Result.Err: errors.As finds it.
type PanicError struct {
	Value any
	Stack string
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }
