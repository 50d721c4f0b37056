package agenttypes

import "errors"

// Sentinel errors callers can branch on with errors.Is.
var (
	// ErrUnknownType is returned when no type is registered under a name.
	ErrUnknownType = errors.New("unknown agent type")
	// ErrUnknownTool is returned when no tool is registered under a name.
	ErrUnknownTool = errors.New("unknown tool")
	// ErrDuplicate is returned when a name is registered twice.
	ErrDuplicate = errors.New("already registered")
	// ErrInvalid is returned for a definition that cannot be used.
	ErrInvalid = errors.New("invalid definition")
)
