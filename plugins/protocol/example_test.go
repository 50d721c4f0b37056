package protocol_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/troupe-dev/troupe/plugins/protocol"
	"github.com/troupe-dev/troupe/sdk"
)

// An error keeps its meaning across the process boundary: a plugin's
// sdk.Error, or a context error, arrives with its code.
func ExampleErrorToWire() {
	wire := protocol.ErrorToWire(fmt.Errorf("grep: %w", sdk.Errorf(sdk.CodeInvalidArgument, "pattern is empty")))
	back := protocol.ErrorFromWire(wire)
	fmt.Println(back.Code, errors.Is(back, sdk.ErrInvalidArgument))

	back = protocol.ErrorFromWire(protocol.ErrorToWire(context.DeadlineExceeded))
	fmt.Println(back.Code)
	// Output:
	// invalid_argument true
	// deadline_exceeded
}
