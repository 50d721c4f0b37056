// Package sdktest checks that an sdk.Tool or an sdk.Loop keeps the
// promises the host relies on, in the spirit of testing/fstest: a plugin
// author (or troupe itself, for its builtin tools) runs one call in a test
// and gets every broken promise reported at once.
//
// CheckTool calls a tool many ways and returns an error naming every
// problem it found; TestTool does the same inside a test. They check that
//
//   - the spec is well-formed: a lower-case name without spaces, a
//     description, and parameters that are a JSON schema of type object
//     with properties (additionalProperties false is recommended: it makes
//     the suite check that unknown arguments are refused);
//   - the spec is stable: Spec returns the same value every time;
//   - bad arguments are errors, never panics: malformed JSON, JSON that is
//     not an object, wrong types, unknown fields, {} and null when an
//     argument is required, huge strings and extreme numbers;
//   - a cancelled context is honoured: every call with a cancelled context
//     returns at once, and a Slow call returns with an error soon after
//     its context is cancelled;
//   - concurrent calls are safe: the cases run from several goroutines at
//     once (run the tests with -race) and, for Deterministic cases, give
//     the answers of a serial run;
//   - each Case gives what it wants: its substrings, or an error.
//
// CheckLoop and TestLoop run a Loop against a fake Session whose model
// answers from a Script. They check that the scripted run succeeds, that
// the loop calls only tools the Session offers, that a budget error from
// the Session (sdk.ErrBudgetExceeded) ends the run with that error
// wrapped, that a failing Session gives an error rather than a panic, that
// cancellation ends the run promptly, and that runs of the loop can go on
// at once. NewSession gives the same fake Session to tests of one's own.
//
// The waits are fixed: an ordinary call or run has 10 seconds, after which
// it is reported as hung and left running; once its context is cancelled,
// a call or run has one second to return. A quick call made with a context
// already cancelled must return within that second too, with an error or
// without: work that does not block need not look at ctx.
//
// Nothing here starts a process or speaks gRPC: the tool or loop is called
// in the test's own process.
package sdktest
