package fault

import (
	"context"
	"errors"
	"fmt"
)

// Code is the class of a failure. Its text is what crosses the wire.
type Code string

// The codes.
const (
	Unknown          Code = "unknown"
	Canceled         Code = "canceled"          // context.Canceled
	DeadlineExceeded Code = "deadline_exceeded" // context.DeadlineExceeded
	InvalidArgument  Code = "invalid_argument"  // bad arguments: the model can correct them
	NotFound         Code = "not_found"         // no such type, tool or agent
	BudgetExceeded   Code = "budget_exceeded"   // a budget is used up
	ToolRefused      Code = "tool_refused"      // the agent may not call that tool
	NoParent         Code = "no_parent"         // a top-level agent asked its parent
	Unavailable      Code = "unavailable"       // try again later
	Internal         Code = "internal"          // a bug, a panic
)

// Error is a failure with its class: what crosses a boundary whole.
// errors.Is matches the sentinel of its code.
type Error struct {
	Code    Code
	Message string
	// Retryable says whether trying the same call again may help.
	Retryable bool
}

func (e *Error) Error() string {
	if e.Message == "" {
		return string(e.Code)
	}
	return e.Message
}

// Is matches the sentinel of e's code, so errors.Is(err, ErrNotFound)
// holds for an *Error with code NotFound, and errors.Is(err,
// context.Canceled) for one with code Canceled.
func (e *Error) Is(target error) bool {
	s := Sentinel(e.Code)
	return s != nil && target == s
}

// Errorf returns an *Error with the code and a formatted message,
// retryable when the code's failures usually are (Unavailable).
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Retryable: code == Unavailable}
}

// sentinel is the sentinel error of a code.
type sentinel struct {
	code Code
	text string
}

func (s *sentinel) Error() string { return s.text }

// Sentinels for errors.Is, one per code. Canceled and DeadlineExceeded
// have the context package's.
var (
	ErrInvalidArgument error = &sentinel{InvalidArgument, string(InvalidArgument)}
	ErrNotFound        error = &sentinel{NotFound, string(NotFound)}
	ErrBudgetExceeded  error = &sentinel{BudgetExceeded, string(BudgetExceeded)}
	ErrToolRefused     error = &sentinel{ToolRefused, string(ToolRefused)}
	ErrNoParent        error = &sentinel{NoParent, string(NoParent)}
	ErrUnavailable     error = &sentinel{Unavailable, string(Unavailable)}
	ErrInternal        error = &sentinel{Internal, string(Internal)}
)

var sentinels = map[Code]error{
	Canceled: context.Canceled, DeadlineExceeded: context.DeadlineExceeded,
	InvalidArgument: ErrInvalidArgument, NotFound: ErrNotFound, BudgetExceeded: ErrBudgetExceeded,
	ToolRefused: ErrToolRefused, NoParent: ErrNoParent, Unavailable: ErrUnavailable, Internal: ErrInternal,
}

// Sentinel returns the sentinel error of code, or nil for Unknown and
// codes this build does not know.
func Sentinel(code Code) error { return sentinels[code] }

// CodeOf returns the code of err: an *Error's own, the code of a sentinel
// err wraps (the context errors included), or Unknown.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	var s *sentinel
	if errors.As(err, &s) {
		return s.code
	}
	switch {
	case errors.Is(err, context.Canceled):
		return Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return DeadlineExceeded
	}
	return Unknown
}
