// Package modelname says what a model may be called: the short names
// (sonnet, opus, haiku) and the provider:model each stands for, "inherit"
// for the parent's model, "offline" for the embedded retrieval model, and
// how a name written in an agent definition becomes troupe's.
//
// It is the one table of these names. Agent definitions (agenttypes), the
// providers (builtin/models), the offline model and the command line all
// read it, so a name means the same model everywhere; it imports nothing
// else of troupe, so any of them can.
package modelname
