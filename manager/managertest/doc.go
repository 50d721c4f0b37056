// Package managertest checks that a kind of agent loop is held to the
// rules every agent is: the type's hooks, the budgets, the events, and the
// bound on what a tool gives the model. The manager's own loop, a type's
// own loop written in Go, and a plugin's loop across the process boundary
// all run through the manager's one model-call step and one tool-call
// step, so each must come out of these cases the same.
//
// TestLoop takes the loop under test as an agenttypes.Loop (nil for the
// manager's own); it must do what the manager's loop does: ask the model
// with the task and the agent's tools, run the tool calls it is given
// (a tool's error goes back to the model as "error: …", a budget error
// ends the loop), and answer with the model's first reply that asks for
// no tool. A loop that reports progress or notes may: those events are
// not compared.
package managertest
