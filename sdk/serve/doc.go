// Package serve runs a troupe plugin: a plugin's main is one call,
//
//	func main() {
//		serve.Serve(sdk.Plugin{Name: "hello", Version: "0.1.0", Types: ..., Tools: ...})
//	}
//
// Serve speaks the plugin protocol (go-plugin over gRPC) with the troupe
// host that started the binary. Run by hand, the binary says that it is a
// troupe plugin and how to install it, and exits with status 1.
//
// Serve keeps a plugin well behaved: a panic in a tool or a loop becomes
// an error with code internal (the stack is logged and kept in the
// message); a call that goes on for longer than a grace period after the
// host cancelled it ends the process, which the host restarts on next
// use; and the process exits within a second of its host's death, so no
// plugin outlives troupe. Logs written with log/slog go to the host as
// hclog JSON lines and show up in troupe's log under the plugin's name;
// anything printed to stdout is dropped.
package serve
