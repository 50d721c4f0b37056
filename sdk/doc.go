// Package sdk is what a troupe plugin author imports: the plain Go types
// and interfaces a plugin implements (its agent types, its tools, and the
// loop of a type that brings its own) and the Session of callbacks such a
// loop gets from the host.
//
// The package holds no wire code: it imports nothing of gRPC, so a plugin
// binary stays small and its author writes ordinary Go. The sibling
// package sdk/serve turns a Plugin into a running plugin process with one
// call, and sdk/sdktest checks any Tool or Loop the same way.
//
// Tracing needs nothing of the sdk: a tool or a loop starts its spans with
// go.opentelemetry.io/otel's otel.Tracer and the context it was given, and
// they join troupe's trace under the call's span (see sdk/serve).
//
// Errors that cross the process boundary keep their meaning: Error and
// the codes and sentinels here are package fault's, troupe's one
// vocabulary of failures. Return an *Error (or wrap one of the sentinels)
// and the host's errors.Is matches the very same sentinel; an error the
// Session returns (a provider's rate limit, a budget used up) matches its
// sentinel here.
package sdk
