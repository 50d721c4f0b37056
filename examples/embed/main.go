// Command embed shows troupe used as a library: it builds a manager with
// the builtin types, spawns two explore agents in parallel over a
// directory, waits for both, and prints their findings.
//
//	go run ./examples/embed [DIR]
//
// With no model configured it uses the offline retrieval model; set
// TROUPE_MODEL (for example openai:gpt-4o-mini), an API key, or a model in
// the config file (docs/models.md) to use a language model.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin"
	"github.com/troupe-dev/troupe/builtin/models"
	"github.com/troupe-dev/troupe/manager"
)

func main() {
	dir := "."
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := run(context.Background(), dir, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, dir string, w io.Writer) error {
	reg := agenttypes.NewRegistry()
	if err := builtin.Register(reg); err != nil {
		return err
	}
	// The environment and the config files choose the model: TROUPE_MODEL,
	// the config's model, a running Ollama, a present API key, else offline.
	resolver, err := models.Load(nil, dir)
	if err != nil {
		return err
	}
	mgr, err := manager.New(manager.Config{
		Registry:     reg,
		Models:       resolver,
		DefaultModel: resolver.Default(),
	})
	if err != nil {
		return err
	}
	defer mgr.Close(ctx)

	questions := []string{
		"where are tool calls executed?",
		"where is the agent queue handled?",
	}
	var reqs []manager.SpawnRequest
	for _, q := range questions {
		reqs = append(reqs, manager.SpawnRequest{Type: "explore", Task: q, Dir: dir})
	}
	// Results come back in the order asked, whichever finished first.
	results, err := mgr.SpawnParallel(ctx, reqs)
	if err != nil {
		return err
	}
	for i, res := range results {
		fmt.Fprintf(w, "%s\n  %s in %s, %d tool calls\n", questions[i], res.State, res.Duration.Round(1e6), res.ToolCalls)
		if f, ok := res.Data.(builtin.Findings); ok {
			for _, finding := range f.Findings[:min(3, len(f.Findings))] {
				fmt.Fprintf(w, "  %s:%d  %s\n", finding.Path, finding.Line, finding.Snippet)
			}
		}
	}
	return nil
}
