package fault_test

import (
	"errors"
	"fmt"

	"github.com/troupe-dev/troupe/sdk/fault"
)

// A failure carries its code; errors.Is matches the code's sentinel
// however deeply it is wrapped, and CodeOf reads the code back.
func ExampleErrorf() {
	err := fmt.Errorf("grep: %w", fault.Errorf(fault.InvalidArgument, "pattern is empty"))
	fmt.Println(err)
	fmt.Println(errors.Is(err, fault.ErrInvalidArgument), fault.CodeOf(err))
	// Output:
	// grep: pattern is empty
	// true invalid_argument
}

// A condition narrower than its code gets a sentinel of its own, which
// also matches its code's: it crosses a boundary as that code.
func ExampleSentinel() {
	errUnknownTool := fault.Sentinel(fault.NotFound, "unknown tool")
	err := fmt.Errorf("%w: frob", errUnknownTool)
	fmt.Println(err)
	fmt.Println(errors.Is(err, errUnknownTool), errors.Is(err, fault.ErrNotFound), fault.CodeOf(err))
	// Output:
	// unknown tool: frob
	// true true not_found
}
