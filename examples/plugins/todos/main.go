// Command troupe-plugin-todos is a troupe plugin: the todos tool, which
// lists the TODO, FIXME, HACK and XXX comments of a repository, and the
// todo-triage agent type, whose own loop ranks them with the host's model.
// See README.md.
package main

import (
	"github.com/troupe-dev/troupe/sdk"
	"github.com/troupe-dev/troupe/sdk/serve"
)

// version is the plugin's own version, shown by troupe plugins list.
const version = "0.1.0"

func main() {
	serve.Serve(sdk.Plugin{
		Name:    "todos",
		Version: version,
		Types:   []sdk.Type{triageType()},
		Tools:   []sdk.Tool{todosTool()},
	})
}
