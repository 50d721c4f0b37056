//go:build !sdkserve

// Command troupe-plugin-todos is a troupe plugin: the todos tool, which
// lists the TODO, FIXME, HACK and XXX comments of a repository, and the
// todo-triage agent type, whose own loop ranks them with the host's model.
// See README.md.
//
// This file stands in for main.go until the sdk/serve package is part of
// troupe; build with -tags sdkserve to use main.go.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "troupe-plugin-todos was built without sdk/serve, so it cannot serve the plugin protocol; rebuild it with: go build -tags sdkserve")
	os.Exit(2)
}
