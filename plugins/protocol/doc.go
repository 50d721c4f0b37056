// Package protocol is the one place the troupe host and its plugins agree
// on: the go-plugin handshake, the plugin set for each protocol version,
// the message size limits, and the conversions between the sdk's plain
// types and the wire's. The host (package plugins) and the plugin side
// (package sdk/serve) both import it; it imports nothing of the host.
package protocol
