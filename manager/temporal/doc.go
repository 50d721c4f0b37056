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
// workflows with queries, so following a run adds nothing to their
// histories. Cancelling an agent cancels its workflow and every child
// workflow.
//
// A worker serves one project checkout (WorkerConfig.Root and Checkout),
// with the types its own registry holds; a run that names another
// checkout, a type the worker lacks or a directory outside its checkout
// fails with an error that says so. Types that change files are refused,
// since a workspace would be on one worker only.
//
// The workflow is replay-safe: it reads time only through
// workflow.Now and timers, makes IDs with SideEffect, and iterates no
// maps.
package temporal
