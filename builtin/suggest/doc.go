// Package suggest finds the name a user probably meant, for the "did you
// mean" part of an error: the closest of the known names by edit
// distance, if any is close enough to be a typo.
//
// Definitions (agenttypes), the providers' config (builtin/models) and the
// command line all say it the same way through this package. It is how
// troupe words its errors, not an API to build on: it may change with
// them.
package suggest
