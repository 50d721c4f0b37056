package wire_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/troupe-dev/troupe/sdk/fault"
	"github.com/troupe-dev/troupe/sdk/wire"
)

// An error keeps its meaning across the process boundary: a
// fault.Error, or a wrapped sentinel or context error, arrives with its
// code and matches the same sentinel.
func ExampleErrorToWire() {
	sent := wire.ErrorToWire(fmt.Errorf("grep: %w", fault.Errorf(fault.InvalidArgument, "pattern is empty")))
	back := wire.ErrorFromWire(sent, "plugin grep")
	fmt.Println(back.Code, errors.Is(back, fault.ErrInvalidArgument))
	fmt.Println(back)

	back = wire.ErrorFromWire(wire.ErrorToWire(context.DeadlineExceeded), "")
	fmt.Println(back.Code, errors.Is(back, context.DeadlineExceeded))
	// Output:
	// invalid_argument true
	// plugin grep: grep: pattern is empty
	// deadline_exceeded true
}
