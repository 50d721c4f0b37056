// Package modelcap names what a language model can tell troupe beyond
// langchaingo's llms.Model: how it counts tokens, the most output one call
// asks for, its price, and whether it can reason at all. A model has a
// capability when it implements the interface; the manager finds it by
// type assertion and does without it otherwise.
//
// The other way, the manager tells a model of each call what
// langchaingo's options cannot carry (CallInfo: the agent's task as its
// caller gave it, the turns and tool calls its budgets leave) on the
// call's context.
//
// The package is a leaf: the manager, which reads capabilities, and the
// providers and models that have them import it, and it imports nothing
// of troupe, so neither side depends on the other.
package modelcap
