package plugins

import (
	"context"
	"errors"
	"fmt"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/sdk/fault"
	"github.com/troupe-dev/troupe/sdk/wire"
	pluginv1 "github.com/troupe-dev/troupe/sdk/wire/proto/troupe/plugin/v1"
)

// Sentinel errors of the host, for errors.Is.
var (
	// ErrChecksum is wrapped by the refusal of a plugin whose binary does
	// not match the lock file, or that the lock file does not list.
	ErrChecksum = errors.New("plugin checksum refused")
	// ErrLockFile is wrapped by the refusal of a lock file that cannot be
	// used; every plugin is refused with it.
	ErrLockFile = errors.New("unusable plugin lock file")
	// ErrDisabled is wrapped by the refusal of a plugin that crashed too
	// often.
	ErrDisabled = errors.New("plugin disabled")
	// ErrStart is wrapped when a plugin could not be started or did not
	// answer Describe.
	ErrStart = errors.New("plugin did not start")
	// ErrProtocolVersion is wrapped, with ErrStart, by the refusal of a
	// plugin whose handshake announces another version of the plugin
	// protocol than this build's (wire.Version).
	ErrProtocolVersion = errors.New("plugin speaks another protocol version")
	// ErrClosed is returned after Host.Close.
	ErrClosed = errors.New("plugin host is closed")
)

// Error is a failure a plugin reported, code and all. errors.Is matches
// troupe's sentinel of its code (agenttypes.ErrBudgetExceeded,
// agenttypes.ErrToolRefused, agenttypes.ErrNoParent, context.Canceled,
// context.DeadlineExceeded)
// and package fault's (fault.ErrNotFound, …).
type Error struct {
	Plugin    string
	Code      fault.Code
	Message   string
	Retryable bool
}

func (e *Error) Error() string { return fmt.Sprintf("plugin %s: %s", e.Plugin, e.Message) }

// Is matches the sentinels of e's code.
func (e *Error) Is(target error) bool {
	switch target {
	case agenttypes.ErrBudgetExceeded:
		return e.Code == fault.BudgetExceeded
	case agenttypes.ErrToolRefused:
		return e.Code == fault.ToolRefused
	case agenttypes.ErrNoParent:
		return e.Code == fault.NoParent
	case context.Canceled:
		return e.Code == fault.Canceled
	case context.DeadlineExceeded:
		return e.Code == fault.DeadlineExceeded
	}
	return (&fault.Error{Code: e.Code}).Is(target)
}

func fromWire(plugin string, e *pluginv1.Error) error {
	if e == nil {
		return nil
	}
	s := wire.ErrorFromWire(e, "")
	return &Error{Plugin: plugin, Code: s.Code, Message: s.Message, Retryable: s.Retryable}
}

// ExitError is the failure of a call whose plugin process exited. It
// wraps agenttypes.ErrPluginExited, so an agent it ends has reason
// plugin_exited.
type ExitError struct {
	Plugin string
	// Status is how the process ended, as in "signal: killed".
	Status string
}

func (e *ExitError) Error() string {
	return fmt.Sprintf("plugin %s exited (%s) during the call; it is started again on next use", e.Plugin, e.Status)
}

// Unwrap returns agenttypes.ErrPluginExited.
func (e *ExitError) Unwrap() error { return agenttypes.ErrPluginExited }

// toWire is the wire form of an error the host's session returned to a
// plugin's loop: troupe's sentinels keep their meaning.
func toWire(err error) *pluginv1.Error {
	if err == nil {
		return nil
	}
	code := fault.Unknown
	switch {
	case errors.Is(err, agenttypes.ErrBudgetExceeded):
		code = fault.BudgetExceeded
	case errors.Is(err, agenttypes.ErrToolRefused):
		code = fault.ToolRefused
	case errors.Is(err, agenttypes.ErrNoParent):
		code = fault.NoParent
	case errors.Is(err, agenttypes.ErrUnknownTool):
		code = fault.NotFound
	case errors.Is(err, agenttypes.ErrPluginExited):
		code = fault.Unavailable
	default:
		return wire.ErrorToWire(err)
	}
	return &pluginv1.Error{Code: string(code), Message: err.Error(), Retryable: code == fault.Unavailable}
}
