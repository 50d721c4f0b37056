// Package mcpserver serves a manager's agent types to MCP (Model Context
// Protocol) clients: each type is a tool that takes a task, runs one agent
// of that type through the manager, and returns its report.
//
// An editor, a desktop assistant or another agent calls troupe's typed,
// budgeted agents the way it calls any MCP tool. What the manager holds
// holds here too: the type's tools and restrictions, its budgets (held to
// Config.Limit whatever a client asks), the tree's usage and cancellation.
// The directory agents work in is the server's, never the client's.
//
// While an agent runs, the client is sent progress notifications for its
// turns, tool calls and subagents, when it asked for them with a progress
// token. A client that cancels its call cancels the agent and everything
// it spawned. A question a subagent puts to the user (see
// manager.Config.AskUser, which the server's AskUser answers) goes to the
// client as an elicitation when the client supports it; otherwise it is
// answered "no answer".
//
// Runs are resources: troupe://runs lists the runs the server started,
// and troupe://runs/ID is one agent's record and, once it ended, its
// result.
package mcpserver
