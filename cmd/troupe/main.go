// Command troupe runs typed, budgeted LLM subagents from the command line.
//
//	troupe run explore --repo . "where are budgets enforced?"
//	troupe types list
//	troupe tools call grep '{"pattern":"Spawn"}' --repo .
//
// It is a thin client of the manager package: flags become a SpawnRequest,
// events become progress lines on stderr, and the Result is printed.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/troupe-dev/troupe/builtin/process"
	"github.com/troupe-dev/troupe/builtin/script"
)

func main() {
	// A plugin's keeper and the script host are this binary, re-executed:
	// each does its work and exits.
	process.ServeIfKeeper()
	script.ServeIfChild()
	paceCollector()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first interrupt, the next one kills the process as
		// usual, in case something does not honour cancellation.
		<-ctx.Done()
		stop()
	}()
	code := execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
