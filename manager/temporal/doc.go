// Package temporal runs troupe's agent trees on Temporal, so that a run
// outlives the process that started it and spreads over many machines.
//
// Each agent run is a workflow (WorkflowName) and each of its steps an
// activity: its start (the prompt and its hooks), each model call, each
// turn's tool calls and its final answer. A worker runs the steps with
// the manager it is given (WorkerConfig.Manager), through the same code
// as the manager's own loop (manager.StepAgent), so types, tools,
// plugins, scripts, hooks and budgets behave as they do in process.
// Children spawned by delegate are child workflows. The conversation,
// the budgets and what a subtree spent live in the workflow, charged from
// each step's result, so they hold across workers and across a worker's
// crash: a step a dead worker was running is run again by another, and a
// step that completed is never run again.
//
// A program switches to Temporal by configuration:
//
//	c, _ := client.Dial(client.Options{HostPort: "127.0.0.1:7233"})
//	b, _ := temporal.New(temporal.Config{Client: c, TaskQueue: "troupe"})
//	m, _ := manager.New(manager.Config{Registry: reg, Backend: b})
//
// and Spawn, Wait, WaitAll, Cancel, Subscribe and OnComplete keep their
// meaning: the manager keeps each top-level agent's handle and publishes
// the events of its whole tree, which the backend reads from the
// workflows' histories (each step's result holds its events), so
// following a run asks nothing of the workers. Cancelling an agent
// cancels its workflow and every child workflow.
//
// A worker serves one project checkout (WorkerConfig.Root and Checkout),
// with the types its own registry holds; a run that names another
// checkout, a type the worker lacks or a directory outside its checkout
// fails with an error that says so. An agent of a type that changes
// files gets a durable workspace (agenttypes.WorkspaceRequest.Durable):
// its start step opens it, each later step reopens it by its handle on
// whichever worker runs it, and its end closes it, a cancel too. So the
// workers must share one state directory and checkout (one machine, or a
// shared filesystem); a worker on another state directory fails the step
// with an error that says so.
//
// The workflow is replay-safe: it reads time only through
// workflow.Now and timers, makes IDs with SideEffect, and iterates no
// maps.
package temporal
