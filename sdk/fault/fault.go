package fault

import (
	"context"
	"errors"
	"fmt"
)

// Code is the class of a failure. Its text is what crosses the wire.
type Code string

// The codes. Each has one sentinel (see Code.Sentinel), the same on every
// side of every boundary.
const (
	Unknown          Code = "unknown"            // no class: only the message tells
	Canceled         Code = "canceled"           // the caller gave up: context.Canceled
	DeadlineExceeded Code = "deadline_exceeded"  // out of time: context.DeadlineExceeded
	InvalidArgument  Code = "invalid_argument"   // the request is wrong (a tool's arguments, a provider's 4xx): fix it, do not retry
	NotFound         Code = "not_found"          // no such type, tool or agent
	Unauthenticated  Code = "unauthenticated"    // the key was refused (HTTP 401, 403)
	RateLimited      Code = "rate_limited"       // too many calls (HTTP 429), or out of quota
	ContextTooLong   Code = "context_too_long"   // the conversation is longer than the model's context window
	ResponseTooLarge Code = "response_too_large" // the answer passed the size limit
	BudgetExceeded   Code = "budget_exceeded"    // a budget of the agent is used up
	ToolRefused      Code = "tool_refused"       // the agent may not call that tool
	NoParent         Code = "no_parent"          // a top-level agent asked its parent
	Unavailable      Code = "unavailable"        // the other side failed (HTTP 5xx, a plugin that exited): try again later
	Unreachable      Code = "unreachable"        // no answer at all: connection refused, DNS, TLS
	Internal         Code = "internal"           // a bug, a panic
)

// Sentinels for errors.Is, one per code but Unknown. Canceled and
// DeadlineExceeded have the context package's.
var (
	ErrInvalidArgument  error = &sentinel{code: InvalidArgument, text: "invalid argument"}
	ErrNotFound         error = &sentinel{code: NotFound, text: "not found"}
	ErrUnauthenticated  error = &sentinel{code: Unauthenticated, text: "authentication failed"}
	ErrRateLimited      error = &sentinel{code: RateLimited, text: "rate limited"}
	ErrContextTooLong   error = &sentinel{code: ContextTooLong, text: "context too long"}
	ErrResponseTooLarge error = &sentinel{code: ResponseTooLarge, text: "response too large"}
	ErrBudgetExceeded   error = &sentinel{code: BudgetExceeded, text: "budget exceeded"}
	ErrToolRefused      error = &sentinel{code: ToolRefused, text: "tool refused"}
	ErrNoParent         error = &sentinel{code: NoParent, text: "agent has no parent"}
	ErrUnavailable      error = &sentinel{code: Unavailable, text: "unavailable"}
	ErrUnreachable      error = &sentinel{code: Unreachable, text: "unreachable"}
	ErrInternal         error = &sentinel{code: Internal, text: "internal error"}
)

var sentinels = map[Code]error{
	Canceled: context.Canceled, DeadlineExceeded: context.DeadlineExceeded,
	InvalidArgument: ErrInvalidArgument, NotFound: ErrNotFound, Unauthenticated: ErrUnauthenticated,
	RateLimited: ErrRateLimited, ContextTooLong: ErrContextTooLong, ResponseTooLarge: ErrResponseTooLarge,
	BudgetExceeded: ErrBudgetExceeded, ToolRefused: ErrToolRefused, NoParent: ErrNoParent,
	Unavailable: ErrUnavailable, Unreachable: ErrUnreachable, Internal: ErrInternal,
}

// Codes lists every code, Unknown first.
func Codes() []Code {
	return []Code{Unknown, Canceled, DeadlineExceeded, InvalidArgument, NotFound, Unauthenticated, RateLimited,
		ContextTooLong, ResponseTooLarge, BudgetExceeded, ToolRefused, NoParent, Unavailable, Unreachable, Internal}
}

// Sentinel returns c's sentinel error, or nil for Unknown and for a code
// this build does not know.
func (c Code) Sentinel() error { return sentinels[c] }

// Retryable reports whether a failure of c usually passes when the same
// call is made again later.
func (c Code) Retryable() bool { return c == Unavailable || c == RateLimited }

// Error is a failure and its class: code, message, retryable. It is what
// crosses a boundary whole, and errors.Is matches its code's sentinel.
type Error struct {
	Code    Code
	Message string
	// Retryable says whether making the same call again may help.
	Retryable bool
}

// Errorf returns an *Error with the code and a formatted message,
// retryable as the code usually is (Code.Retryable).
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Retryable: code.Retryable()}
}

func (e *Error) Error() string {
	switch {
	case e.Message != "":
		return e.Message
	case e.Code.Sentinel() != nil:
		return e.Code.Sentinel().Error()
	}
	return string(e.Code)
}

// Is matches the sentinel of e's code, so errors.Is(err, ErrNotFound)
// holds for an *Error with code NotFound, and errors.Is(err,
// context.Canceled) for one with code Canceled.
func (e *Error) Is(target error) bool {
	s := e.Code.Sentinel()
	return s != nil && target == s
}

// sentinel is a sentinel error of a code: the code's own, or one made by
// Sentinel, which wraps the code's own.
type sentinel struct {
	code Code
	text string
	of   error // the code's own sentinel, for one made by Sentinel
}

func (s *sentinel) Error() string { return s.text }
func (s *sentinel) Unwrap() error { return s.of }

// Sentinel returns a new sentinel error of code, for a condition callers
// branch on that is narrower than its code (an unknown tool is a case of
// NotFound). errors.Is matches it as any sentinel made with errors.New,
// and also code's own sentinel, so CodeOf reads code from it and it
// crosses a boundary as code. (On the other side of the boundary only
// code's sentinel matches.)
func Sentinel(code Code, text string) error {
	return &sentinel{code: code, text: text, of: code.Sentinel()}
}

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

// Retryable reports whether making the call that failed with err again may
// help: an *Error's own say, else what err's code usually means.
func Retryable(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return e.Retryable
	}
	return CodeOf(err).Retryable()
}
