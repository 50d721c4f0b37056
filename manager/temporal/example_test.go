package temporal_test

import (
	"context"
	"log"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/models"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/temporal"
)

// A manager whose agents run on a Temporal cluster: the same API, and
// no model key here, since the workers resolve the models.
func Example() {
	c, err := client.Dial(client.Options{HostPort: "127.0.0.1:7233"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	b, err := temporal.New(temporal.Config{Client: c, TaskQueue: "reviews", Root: "."})
	if err != nil {
		log.Fatal(err)
	}
	reg := agenttypes.NewRegistry() // the project's types, as the workers have them
	m, err := manager.New(manager.Config{Registry: reg, Backend: b})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close(context.Background())
	a, err := m.Spawn(context.Background(), manager.SpawnRequest{Type: "review", Task: "review the last commit"})
	if err != nil {
		log.Fatal(err)
	}
	r, err := a.Wait(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	log.Println(r.State, r.Output)
}

// A worker: the project's manager, with its models, serving a task queue.
func ExampleNewWorker() {
	c, err := client.Dial(client.Options{HostPort: "127.0.0.1:7233"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	reg := agenttypes.NewRegistry() // the project's types, tools, plugins and scripts
	// The worker's models, with the keys in its environment.
	m, err := manager.New(manager.Config{Registry: reg, Models: &models.Resolver{}, DefaultModel: "anthropic:claude-sonnet-4-5"})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close(context.Background())
	w, err := temporal.NewWorker(c, temporal.WorkerConfig{Manager: m, TaskQueue: "reviews", Root: "."})
	if err != nil {
		log.Fatal(err)
	}
	if err := w.Run(worker.InterruptCh()); err != nil {
		log.Fatal(err)
	}
}
