package agenttypes

import (
	"errors"

	"github.com/troupe-dev/troupe/sdk/fault"
)

// Sentinel errors callers can branch on with errors.Is.
var (
	// ErrUnknownType is returned when no type is registered under a name.
	// Its code is not_found.
	ErrUnknownType = fault.Sentinel(fault.NotFound, "unknown agent type")
	// ErrUnknownTool is returned when no tool is registered under a name.
	// Its code is not_found.
	ErrUnknownTool = fault.Sentinel(fault.NotFound, "unknown tool")
	// ErrDuplicate is returned when a name is registered twice.
	ErrDuplicate = errors.New("already registered")
	// ErrInvalid is returned for a definition that cannot be used.
	ErrInvalid = errors.New("invalid definition")
)
