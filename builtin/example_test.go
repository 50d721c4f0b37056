package builtin_test

import (
	"fmt"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin"
)

// Register adds the builtin types and their tools to a registry; nothing
// registers itself.
func ExampleRegister() {
	reg := agenttypes.NewRegistry()
	if err := builtin.Register(reg); err != nil {
		panic(err)
	}
	for _, t := range reg.Types() {
		fmt.Println(t.Name, t.NeedsLanguageModel)
	}
	// Output:
	// explore false
	// general true
	// plan true
	// review true
}
