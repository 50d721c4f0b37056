package plugins

import (
	"errors"
	"fmt"

	"github.com/troupe-dev/troupe/agenttypes"
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

// fromWire is the failure a plugin reported, as a *fault.Error whose
// message names the plugin: its code matches the same sentinel here as in
// the plugin.
func fromWire(plugin string, e *pluginv1.Error) error {
	if e == nil {
		return nil
	}
	return wire.ErrorFromWire(e, "plugin "+plugin)
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
