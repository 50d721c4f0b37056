// Package mcp gives agents the tools of MCP (Model Context Protocol)
// servers, as agenttypes.Tool values named mcp__SERVER__TOOL.
//
// A Pool serves one run. It starts a server on the first call that needs
// it, shares that session among every agent of the run, and stops them
// all on Close. A stdio server runs under a keeper (see builtin/process),
// so it does not outlive troupe even when troupe is killed with SIGKILL,
// and it gets troupe's scrubbed environment plus only the variables its
// entry names, where ${VAR} takes VAR from troupe's environment. An HTTP
// server is reached over the streamable HTTP transport with its entry's
// headers.
//
// A tool's arguments are checked against the server's input schema
// before the call; its result comes back as text, bounded in size, and a
// result the server marks as an error becomes the call's error. A server
// whose session breaks is restarted once; after a second break its tools
// fail, naming it. Listing tools needs a server's description: with a
// cache directory, a server seen before (the same entry, by its digest)
// is described from the cache and nothing is started.
package mcp
