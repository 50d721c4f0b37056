package script

// The script host is a builtin plugin: the troupe binary, re-executed,
// serves the plugin protocol (go-plugin over gRPC, the same handshake,
// plugin set and Plugin service as a third-party plugin) with two tools
// of reserved names. A script call is a tool call: its arguments are a
// request as JSON, and its text is a response as JSON.
//
// The Plugin service already has the shape a script call needs (JSON in,
// text out, a deadline, an in-band error), so the protocol is unchanged
// and its version stays where it is; a Script service of its own would
// add a second service for every plugin to carry and nothing a script
// needs. The host API stays whole in the child: ReadFile and ListFiles
// read under the agent's root there, and Note and Log travel back with
// the reply, so no call goes back to the host during a script's run.
//
// The host sends one call at a time to each script host process.

// Names of the script host's tools.
const (
	toolLoad = "troupe.script.load"
	toolCall = "troupe.script.call"
)

// pluginName is the name the script host gives itself.
const pluginName = "troupe-script-host"

type request struct {
	Prog *Program `json:"prog"`
	Call *Call    `json:"call,omitempty"`
}

type response struct {
	Reply   Reply      `json:"reply"`
	Compile []srcError `json:"compile,omitempty"`
	// Fail says how the script failed (a panic, say); "" when it answered.
	Fail string `json:"fail,omitempty"`
	// Retire asks the host to stop this process: the script left
	// goroutines running, or grew it past its limits.
	Retire bool `json:"retire,omitempty"`
}
