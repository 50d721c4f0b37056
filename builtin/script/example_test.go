package script_test

import (
	"context"
	"fmt"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/script"
)

func Example() {
	h := script.New(script.Options{AllInProcess: true})
	defer h.Close()
	hooks, diags := h.Compile(context.Background(), "shout", &agenttypes.Scripts{Hooks: &agenttypes.Script{
		File: "shout.yaml", Line: 5,
		Source: `package hooks

import (
	"strings"
	"troupe"
)

func Prompt(task troupe.Task) (string, error) { return strings.ToUpper(task.Prompt), nil }
`}})
	if len(diags) > 0 {
		fmt.Println(diags)
		return
	}
	out, err := hooks.Prompt(context.Background(), agenttypes.ScriptTask{Prompt: "find the bug"})
	fmt.Println(out, err)
	// Output: FIND THE BUG <nil>
}
