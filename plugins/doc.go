// Package plugins is troupe's plugin host: it discovers plugin binaries
// (troupe-plugin-NAME in the project's .troupe/plugins, $TROUPE_PLUGIN_PATH
// and the user's data directory), verifies them against the project's
// lock file, starts each on first use as a go-plugin gRPC process that
// every agent shares, and puts their types and tools in an
// agenttypes.Registry with source "plugin:NAME".
//
// Load checks each type a plugin offers as it checks any type
// (agenttypes.Type.Validate), its workspace mode, run policy and setup
// commands included, and leaves out, with an error naming the plugin, a
// type it refuses; the plugin's other types and tools load. A plugin's
// run list needs no trust of its own: the plugin itself runs only when it
// is the user's or trusted.
//
// A plugin's tool becomes an agenttypes.Tool whose calls go to the
// process; a plugin type with its own loop becomes an agenttypes.Loop
// whose Run asks the plugin to run it and serves the loop's model and
// tool calls from the agent's Session, so the manager counts and budgets
// them as for any agent. Both travel on the plugin's lane (wire.Lane),
// a few sockets that cost a call a fraction of a gRPC round trip, when
// the plugin serves it, and over gRPC and go-plugin's broker otherwise.
//
// A call made within a sampled span carries its trace context to a
// plugin that takes it (one built with sdk/serve), and the spans the
// plugin made under it come back with the answer: they are recorded under
// the call's span by that span's TracerProvider (scope Scope), held to
// sdk/wire's limits as they are read, whatever the plugin sent. Those
// that come back with any other call are not even read. Config.MeterProvider counts the restarts of
// plugins that crashed (RestartsMetric).
//
// Failure stays with the plugin: a process that exits fails only the
// calls in flight on it (errors wrapping agenttypes.ErrPluginExited, so an
// agent ends with reason plugin_exited), the next use starts it again,
// and a plugin that crashes Config.MaxCrashes times in Config.CrashWindow
// is disabled until the next Load. Host.Close stops every process.
//
// Containment: a plugin of the project's own folder runs only when
// Config.TrustProject trusts the SHA-256 of its binary, whatever the lock
// file says, and a checked plugin runs from the very bytes that were
// checked (see process.Open). Every plugin gets an allow-listed
// environment (process.Env) with no API key and no OTEL_* variable (not
// even one Config.Env names), and runs in a process group
// that is killed whole when it ends. A program that calls
// process.ServeIfKeeper first in main also runs each plugin under a
// keeper, so that nothing the plugin starts outlives the program, even
// when the program is killed with SIGKILL.
//
// The wire protocol is package sdk/wire, which both sides import; the
// plugin side is sdk/serve. The host does not import the sdk's plain
// types: it converts the wire's to agenttypes' itself.
package plugins
