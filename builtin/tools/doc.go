// Package tools holds the builtin tools: the read-only file tools an agent
// uses to look at its directory (read, grep, glob, ls and git), and the
// tools it acts on its agent tree with (delegate, collect and ask_parent).
//
// Each tool is an agenttypes.Tool. A file tool takes the agent's directory
// from agenttypes.EnvFrom(ctx).Dir, opens it with fsroot for the call, and
// never reaches outside it. Arguments are parsed strictly: an unknown field
// is an error that lists the valid ones.
//
// Other code parses the tools' output, so its shape is fixed. Lines are
// separated by "\n", with no newline after the last; notes that are not
// data start with "... ".
//
// read {path, offset, limit}: one line per file line, "%6d\t%s" (the line
// number right-aligned in six columns, a tab, the text without its line
// ending). Lines over 2000 bytes are cut and end with " [... N more
// bytes]". At most limit lines (default 2000) and 256 KiB; when more
// follows, a last line "... more lines follow; continue with offset=N" or
// "... output truncated at 256 KiB; continue with offset=N". An empty file
// gives "(empty file)". Binary files (a NUL byte in the first 8 KiB) are an
// error.
//
// grep {pattern, path, glob, ignore_case, max_results}: one line per
// matching line, "path:line:text", path relative to the root with '/',
// sorted by path then line whatever the parallelism; a path that could
// be misread (holding ':', a newline or other control character, bytes
// that are not UTF-8, ...) is written Go-quoted, as in "a:b.go":3:text
// (see QuotePath), and ParseGrep reads the output back into Match values; text without its line
// ending, cut to 300 bytes with " [...]" appended when longer. When more
// lines matched than max_results (default 100, at most 2000), a last line
// "... N more matches not shown; narrow the pattern or raise max_results".
// No match gives "no matches". Walks respect .gitignore files (the root's,
// nested ones and those above path) and .git/info/exclude, never enter
// .git or symlinked directories, do not follow symlinks, and skip binary
// files and files over 8 MiB. Directories more than 256 levels below
// path are not entered (a guard against walks sent in circles); when any
// were left out, a last line says so: "... N directories more than 256
// levels below the path were not searched" ("1 directory ... was"). The
// pattern is RE2 (Go regexp), at most 4 KiB, and matches within a line. A panic in one of
// the walk's worker goroutines stops the walk and becomes the tool's
// error (its stack is logged); it never ends the process.
//
// glob {pattern, path}: one path per line, relative to the root (quoted
// like grep's, read back by ParseGlob), newest modification time first,
// then by path; files only (and symlinks to
// files inside the root). At most 500, then "... N more files not shown;
// narrow the pattern or path". No match gives "no files match". Same
// .gitignore rules and depth limit as grep, with "were not listed" in the
// note.
//
// ls {path}: one entry per line sorted by name: "name/" for a directory,
// "name\tSIZE" for a file (size in bytes), "name -> TARGET" for a symlink,
// "name\t(named pipe)" (or socket, device, special file) for others. At
// most 1000, then "... N more entries not shown; use glob to narrow". An
// empty directory gives "(empty directory)"; a file path gives its own
// "name\tSIZE" line.
//
// git {args}: runs git with the subcommand diff, log, show, status or
// blame in the root, which must be the top of a repository (a repository
// above the root is not used). git reads only the root's own repository:
// the tool resolves the git directory itself and refuses a .git file or
// symlink, a commondir, an objects/info/alternates entry (chained ones
// too) or a symlinked entry of the git directory that points outside the
// root, with an error saying so; a linked worktree made by `git worktree
// add`, whose git directory names the root back, is accepted with its
// main repository. Flags come from a per-subcommand allow-list;
// options that write files, read outside the repository or run programs
// (--output, --no-index, --ext-diff, -c, --git-dir, --work-tree,
// --exec-path, ...) are refused; revisions may not start with '-'; paths
// are resolved inside the root and passed after "--". git runs with a
// fixed environment (no system or global config, no pager, no prompts, no
// optional locks, the root as work tree) and never runs a program the
// repository configures: every configuration key that names a program
// (filter, diff and merge drivers, textconv, fsmonitor, hooks, pagers,
// gpg, credential helpers, transports for lazy fetches, ...) or a file
// outside the repository is overridden, including keys pulled in by
// include.path, and submodules are not entered. A call that would need a
// neutralised driver fails rather than runs it. Its output is returned as is, "(no output)" when empty,
// or cut at 256 KiB with a last line "... output truncated at 256 KiB;
// narrow with paths, -n, --stat or -L".
//
// # The agent tree: delegate, collect, ask_parent
//
// These reach the manager only through agenttypes.EnvFrom(ctx).Tree; with
// no Tree (a tool called outside a manager) each fails with "NAME works
// only inside an agent run by a manager". Which agents are offered them
// is the manager's choice: delegate and collect only to agents below its
// depth limit, ask_parent to every child. Approval of a delegate call is
// the manager's too. Every argument mistake is an error naming the argument and what to
// give instead, and nothing is spawned.
//
// delegate {tasks, concurrency, mode, return} spawns one child per task
// through Tree.Delegate. tasks holds 1 to 8 objects: label (1 to 32
// characters, one line, different for each task), prompt (not blank), and
// optionally type (default "explore"; a task that resumes and names no
// type leaves it to the manager), context (up to 10 paths), tools
// (narrows the type's tools), model, max_output_tokens (100 to 16,384),
// the budget fields max_tokens, max_time (a Go duration string such as
// "90s"), max_tool_calls, max_turns, max_cost_usd (each positive), and
// resume (the ID of an ended child). concurrency is 1 to 4 (default 2);
// mode "parallel" (default) or "background"; return "markdown" (default)
// or "json". Context files are read through fsroot as read reads them
// (paths inside the root only, regular text files only) and put in front
// of the prompt:
//
//	Context files, read for you from the repository:
//
//	<file path="cart/cart.go">
//	...the file...
//	</file>
//
//	Your task:
//
//	...the prompt...
//
// At most 16 KiB of each file is shown, cut at a line end when one is
// near and followed by "[... cut here: 16 KiB of 40 KiB shown; read the
// file from line 410 (offset=410) for the rest]"; the files of one task
// share 64 KiB, and one that no longer fits is named with "[not included:
// ...]". An error from Tree.Delegate (a refusal wrapping
// agenttypes.ErrDelegation, a model that cannot be resolved) is the
// tool's error, prefixed "cannot spawn subagents: ".
//
// In parallel mode the result lists every child in task order. Markdown:
//
//	# Subagents complete: 1/3 (1 partial, 1 failed)
//
//	## [auth] ok — explore, model openai:gpt-4o-mini, 45k in / 2.1k out, $0.0123, 12 tool calls, 6 turns, 41.3s
//	Agent ID: ag-1
//
//	...the report...
//
//	## [db] partial (budget_tool_calls) — explore, model ..., 20 tool calls, 9 turns, 1m32s
//	...
//
// N in "Subagents complete: N/M" counts status ok; the other statuses
// (partial, failed, cancelled) follow in brackets when there are any. A
// section's heading holds the status, the reason when it is not "done"
// and differs from the status, the type, model, tokens in and out, cost
// when known, tool calls, turns and wall time; then "Agent ID: ID", an
// "Error: ..." line for a child that failed, a blank line, and the report
// as the child wrote it, or "(no report)". A partial child's report holds
// its notes. JSON: {"completed", "partial", "failed", "cancelled",
// "total", "results"}, where the four counts add up to total (cancelled
// is not counted as failed), and each result has label, id, type, model,
// status, reason, usage {input_tokens, output_tokens, cost_usd},
// tool_calls, turns, duration_ms, report, report_cut (when cut) and
// error.
//
// Reports are never cut silently. Each is shown up to 24 KiB, and all of
// one result share 88 KiB (a report shorter than its share is whole; what
// it leaves goes to the longer ones), so that the whole result stays
// under about 96 KiB. A cut report ends, after a blank line, with "[report
// cut at 24 KiB of 80 KiB. The full report is the result of agent ID:
// `troupe runs show ID` on the command line, Manager.Wait(ctx, "ID") from
// Go. To get more of it here, delegate with resume: "ID" and ask for the
// part you need.]".
//
// In background mode delegate returns at once: "Started group G with N
// subagents:", a line "- [label] ID" per child, and a line saying to call
// collect; or in JSON {"group": G, "tasks": [{"label", "id"}, ...]}.
//
// collect {group, wait, cancel, return} reports a background group
// through Tree.Collect, waiting up to wait seconds (0 to 600, fractions
// allowed; default 0) for it to finish. cancel: true first cancels the
// group's children still running (Tree.CancelGroup), then waits wait
// seconds, or 10 when wait is left out, for them to end. Markdown: "#
// Group G done — Subagents complete: N/M (...)" or "# Group G still
// running — ...", then "Still running: [label] ID, ..." with what to do
// next, then the same sections as delegate, where a child still running
// has status running and "(still running)" for its report. JSON: {"group",
// "done", the counts as for delegate, "running", "results"}. An unknown
// group is an error that says which IDs collect takes.
//
// ask_parent {question, suggestions} asks the parent through
// Tree.AskParent and waits. question is 1 to 2,000 characters,
// suggestions up to 5 answers of up to 500 characters. The result is
// "Answer from your parent: TEXT" (also for an answer from a Go handler),
// "Answer from the user, to whom your parent passed your question: TEXT",
// or, when no answer came in time, "No answer came; decide for yourself
// and say in your report what you assumed." For a top-level agent
// (agenttypes.ErrNoParent) it is an error saying there is no parent to
// ask.
package tools
