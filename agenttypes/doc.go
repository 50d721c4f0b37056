// Package agenttypes defines what an agent type is and what a tool is, and
// holds the Registry that maps names to both.
//
// A Type is a definition: a name, a system prompt, the tools an agent of
// that type may call, the model it prefers and its default Budget. A Tool is
// anything an agent can call by name with JSON arguments. The manager
// package runs agents; this package only describes them, so that the
// builtin set, definition files, scripts and plugins can all produce the
// same values.
package agenttypes
