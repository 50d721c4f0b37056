package modelname_test

import (
	"fmt"

	"github.com/troupe-dev/troupe/builtin/models/modelname"
)

func ExampleNormalize() {
	for _, written := range []string{"sonnet", "claude-opus-4-1", "openai:gpt-4o-mini", "", modelname.Offline, "gpt-4o"} {
		name, err := modelname.Normalize(written)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%q -> %s\n", written, name)
	}
	// Output:
	// "sonnet" -> anthropic:claude-sonnet-4-5
	// "claude-opus-4-1" -> anthropic:claude-opus-4-1
	// "openai:gpt-4o-mini" -> openai:gpt-4o-mini
	// "" -> inherit
	// "offline" -> offline
	// model "gpt-4o": write provider:model; did you mean openai:gpt-4o?
}

func ExampleAliases() {
	fmt.Println(modelname.Aliases()["haiku"])
	// Output: anthropic:claude-haiku-4-5
}
