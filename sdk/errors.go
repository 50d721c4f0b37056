package sdk

import (
	"errors"
	"fmt"
)

// Code says what kind of failure an Error is. The host maps each code to
// troupe's sentinel error, so errors.Is works across the process boundary.
type Code string

// The codes.
const (
	CodeUnknown          Code = "unknown"
	CodeCanceled         Code = "canceled"          // context.Canceled
	CodeDeadlineExceeded Code = "deadline_exceeded" // context.DeadlineExceeded
	CodeInvalidArgument  Code = "invalid_argument"  // bad arguments: the model can correct them
	CodeNotFound         Code = "not_found"         // no such type, tool or agent
	CodeBudgetExceeded   Code = "budget_exceeded"   // a budget is used up
	CodeToolRefused      Code = "tool_refused"      // the agent may not call that tool
	CodeNoParent         Code = "no_parent"         // a top-level agent asked its parent
	CodeUnavailable      Code = "unavailable"       // try again later
	CodeInternal         Code = "internal"          // a bug, a panic
)

// Error is an error that crosses the plugin boundary whole.
type Error struct {
	Code      Code
	Message   string
	Retryable bool
}

func (e *Error) Error() string {
	if e.Message == "" {
		return string(e.Code)
	}
	return e.Message
}

// Is matches the sentinel of e's code, so errors.Is(err, sdk.ErrNotFound)
// holds for an *Error with CodeNotFound.
func (e *Error) Is(target error) bool {
	s, ok := target.(*sentinel)
	return ok && s.code == e.Code
}

type sentinel struct{ code Code }

func (s *sentinel) Error() string { return string(s.code) }

// Sentinels for errors.Is, one per code.
var (
	ErrInvalidArgument error = &sentinel{CodeInvalidArgument}
	ErrNotFound        error = &sentinel{CodeNotFound}
	ErrBudgetExceeded  error = &sentinel{CodeBudgetExceeded}
	ErrToolRefused     error = &sentinel{CodeToolRefused}
	ErrNoParent        error = &sentinel{CodeNoParent}
	ErrUnavailable     error = &sentinel{CodeUnavailable}
	ErrInternal        error = &sentinel{CodeInternal}
)

// Errorf returns an *Error with the code and a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Retryable: code == CodeUnavailable}
}

// CodeOf returns the code of err: an *Error's own, the code of a
// sentinel err wraps, or CodeUnknown.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	var s *sentinel
	if errors.As(err, &s) {
		return s.code
	}
	return CodeUnknown
}
