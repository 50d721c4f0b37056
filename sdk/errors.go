package sdk

import "github.com/troupe-dev/troupe/sdk/fault"

// Code says what kind of failure an Error is. It is fault.Code, troupe's
// one vocabulary of failures: a code sent from a plugin matches the same
// sentinel under errors.Is in the host, and the other way round.
type Code = fault.Code

// The codes, as package fault names them.
const (
	CodeUnknown          = fault.Unknown
	CodeCanceled         = fault.Canceled         // context.Canceled
	CodeDeadlineExceeded = fault.DeadlineExceeded // context.DeadlineExceeded
	CodeInvalidArgument  = fault.InvalidArgument  // bad arguments: the model can correct them
	CodeNotFound         = fault.NotFound         // no such type, tool or agent
	CodeUnauthenticated  = fault.Unauthenticated  // a provider refused the key
	CodeRateLimited      = fault.RateLimited      // too many calls, or out of quota
	CodeContextTooLong   = fault.ContextTooLong   // longer than the model's context window
	CodeResponseTooLarge = fault.ResponseTooLarge // an answer passed the size limit
	CodeBudgetExceeded   = fault.BudgetExceeded   // a budget is used up
	CodeToolRefused      = fault.ToolRefused      // the agent may not call that tool
	CodeNoParent         = fault.NoParent         // a top-level agent asked its parent
	CodeUnavailable      = fault.Unavailable      // try again later
	CodeUnreachable      = fault.Unreachable      // no answer at all
	CodeInternal         = fault.Internal         // a bug, a panic
)

// Error is an error that crosses the plugin boundary whole: fault.Error.
type Error = fault.Error

// Sentinels for errors.Is, one per code: package fault's very values.
var (
	ErrInvalidArgument  = fault.ErrInvalidArgument
	ErrNotFound         = fault.ErrNotFound
	ErrUnauthenticated  = fault.ErrUnauthenticated
	ErrRateLimited      = fault.ErrRateLimited
	ErrContextTooLong   = fault.ErrContextTooLong
	ErrResponseTooLarge = fault.ErrResponseTooLarge
	ErrBudgetExceeded   = fault.ErrBudgetExceeded
	ErrToolRefused      = fault.ErrToolRefused
	ErrNoParent         = fault.ErrNoParent
	ErrUnavailable      = fault.ErrUnavailable
	ErrUnreachable      = fault.ErrUnreachable
	ErrInternal         = fault.ErrInternal
)

// Errorf returns an *Error with the code and a formatted message.
func Errorf(code Code, format string, args ...any) *Error { return fault.Errorf(code, format, args...) }

// CodeOf returns the code of err: an *Error's own, the code of a
// sentinel err wraps, or CodeUnknown.
func CodeOf(err error) Code { return fault.CodeOf(err) }
