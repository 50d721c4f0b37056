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
//
// Serve installs the global OpenTelemetry TracerProvider: a span started
// with otel.Tracer from the context a tool or a loop receives (or one
// derived from it) is a child of troupe's span of the call, and goes back
// with the call's answer for troupe to record in its own trace. Nothing
// is exported from the plugin, which never learns where troupe's spans
// go; a span outside any call, or of a call troupe does not trace, is not
// recorded. docs/plugins.md lists the limits a call's spans are held to.
// Serve replaces a global TracerProvider the plugin installed itself
// before it (otel.SetTracerProvider): tracers taken from that provider
// keep recording into it, and their spans never reach troupe.
package serve
