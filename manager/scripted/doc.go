// Package scripted provides a language model that plays back a script, for
// tests and benchmarks of code that runs agents.
//
// A Model holds a list of Steps. Each conversation follows the script on
// its own: the step answered is chosen by how many assistant messages the
// conversation already holds, so one Model serves any number of agents at
// once, each getting step 0, then step 1, and so on.
package scripted
