// Package script runs the Go scripts agent definitions carry (script:,
// script_file:, script_tools:), interpreted with yaegi behind an
// allow-list of standard packages and a small host API (import "troupe").
//
// A Host implements agenttypes.ScriptCompiler: it checks and compiles each
// script once when its definition loads, and binds the hooks (Prompt,
// Result, BeforeTool) and script tools into agenttypes.Hooks, which the
// manager calls. Scripts run in script host processes (the program
// re-executed; its main calls ServeIfChild first), builtin plugins that
// speak the plugin protocol (see wire.go), held to a memory limit,
// a stack limit, a goroutine limit, and per call a limit of wall time and
// one of CPU time (the kernel's count, for scripts that keep several cores
// busy),
// so a hostile
// script fails its own agent with agenttypes.ErrScript and nothing else.
// Options.InProcess lets an operator run trusted types' scripts in the
// host process instead, for speed.
//
// A hook or script tool called within a span is one span in the script
// host ("script Prompt", "script Run", ...; tracer TracerScope), which
// comes back with the answer and is recorded under the caller's span,
// saying what was called and how it went, never its arguments or answer.
package script
