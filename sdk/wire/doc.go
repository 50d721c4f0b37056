// Package wire is the plugin protocol, the one place the troupe host and
// its plugins agree on: the generated gRPC code (package pluginv1 below
// it), the go-plugin handshake and the plugin set for each protocol
// version, the message size limits, the environment the host gives a
// plugin, the crossing of errors, deadlines and trace context (and of
// the spans a plugin made, which RecordSpans records in the host's trace
// within the limits MaxSpans and kin), and the lane (NewLane),
// the sockets beside gRPC on which the host calls a plugin's tools and a
// plugin's loops call the host, at a fraction of gRPC's cost.
//
// The host (package plugins) and the plugin side (package sdk/serve) both
// import it, and it imports neither: each side converts its own types to
// the wire's. Failures cross as fault.Error, so a code sent from one side
// matches the same sentinel under errors.Is on the other.
package wire
