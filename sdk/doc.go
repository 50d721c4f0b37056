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
// Errors that cross the process boundary keep their meaning: return an
// *Error (or wrap one of the sentinels here) and the host's errors.Is
// finds troupe's matching sentinel.
package sdk
