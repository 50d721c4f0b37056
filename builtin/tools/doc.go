// Package tools holds the builtin tools: the read-only file tools an agent
// uses to look at its directory (read, grep, symbols, glob, ls and git), the
// tools it acts on its agent tree with (delegate, collect and
// ask_parent), and the tools that change its own workspace (write, edit,
// run and merge).
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
// symbols {query, path, kind, max_results}: an outline of the code's
// declarations (package outline reads them: Go with go/parser; Python by
// indentation; JavaScript/TypeScript, Rust, Java and C by line patterns
// and braces). The first line counts: "N declarations in F files; M
// match: word n, word n" ("M func declarations match" with kind), each
// word of the query with how many declarations it matches, so that a
// caller can weigh rare words. Then one line per declaration,
// "path:start-end kind name signature — doc": the path quoted as grep
// quotes it, the span in lines (without the doc comment), kind func,
// type or value, the name as its language writes a member
// ("(*Server).Shutdown", "Session.request", "Parser::next_token";
// Go-quoted when it would not read as one word), the declaration's
// header on one line (at most 200 runes, with " — " written " - "), and
// the first sentence of its doc comment (at most 160 runes), left out
// with its " — " when there is none. ParseSymbols reads the output back.
// The query's words are runs of letters, digits and '_' of two letters or
// more, lower-cased, '_' removed, at most 32, less a plural or verb
// ending when four letters stay ("validated" is validat, "connections"
// connection, "parsing" pars); a word matches a name when
// it starts at a part of it (split at case changes and '_': "timeout"
// and "read_header" match readHeaderTimeout, "eader" does not), and a doc
// comment when it starts at a part of one of its words (its first 4 KiB
// searched), and a body when it starts at a part of one of the words of
// its own lines (after the first, which holds the name; not its doc
// comment, nor the lines of the declarations inside it, such as a
// class's methods); English function words ("the", "how") match names
// only. A declaration matches when a word matches its name, its doc or
// its body; a word that matches its receiver or class counts too once
// it does. The counts of the first line are of declarations a word
// matches in any of these. Without a query every declaration matches,
// in path and line order. With one they are ranked by relevance, BM25
// over fields: each word weighs by how rare it is among the
// declarations scanned, and counts most in the name, then the doc
// comment, then the receiver or class, and by how often the body uses
// it, a long body less for each use; ties by path, line and name. At most
// max_results (default 50, at most 500), then "... N more matches not
// shown; narrow the query, path or kind, or raise max_results". The walk
// is grep's (.gitignore, no .git, no symlinks, no binary files, the
// depth limit), and leaves out test files and directories, vendored
// directories and generated files (a "DO NOT EDIT", "@generated" or
// "<auto-generated" comment in the first 2 KiB, a .min. file name)
// unless path names such a file, or a directory that is or is inside a
// test or vendored one; a note counts what was left out ("... left out:
// 2 test files, 1 generated file; name one as path to include it").
// Files over 2 MiB are not outlined (a note says how many; naming one is
// an error); a call takes the first 5000 files by path, and at most 64
// MiB of them, and a note says how many more there were. A file whose
// outline panics is left out with a note, its stack logged. Nothing is
// cached between calls.
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
//
// # The changing tools: write, edit, run, merge
//
// Changing returns them. They act only in the calling agent's own
// workspace, agenttypes.EnvFrom(ctx).Workspace; for an agent without one
// each fails with "NAME: this agent has no workspace of its own: only
// types that list write, edit, run or merge get one, and only their
// agents may change files or run commands". Their specs have ReadOnly
// false; arguments are parsed as strictly as the read tools'.
//
// write {path, content} and edit resolve path with the read tools'
// resolver (fsroot) in the workspace's directory, so every path the read
// tools refuse (outside the workspace lexically or through a symlink, a
// NUL byte, a named pipe, socket or device) they refuse too, and more:
// any path through a symlink, even one that stays inside (the error
// names the real path to use instead); any name a file system could take
// for .git (".GIT", ".git.", "GIT~1", ...), the workspace's link to its
// repository, at any depth; the workspace's top itself; a path over
// 1,024 bytes or a name over 255. A refused call changes nothing on
// disk. A file is written atomically: a temporary file in its directory,
// renamed over it, so a reader never sees half of it and a hard link to
// the old file keeps its content; a replaced file keeps its permissions,
// a new one gets 0644, and missing parent directories are made (and
// removed again if the write fails). Writes and edits of one file made at
// once are serialised. content is at most 4 MiB. The result is "created
// PATH (N lines, SIZE)", "replaced PATH (N lines, SIZE)", or "PATH
// already holds this content; nothing changed".
//
// edit {path, old_string, new_string, replace_all} replaces the exact
// text old_string with new_string in an existing UTF-8 text file of at
// most 4 MiB (one with a NUL byte, or not UTF-8, is refused as binary).
// old_string must not be empty (the error points to write) nor equal
// new_string. Without replace_all it must occur exactly once; more is an
// error giving the count and the first lines it occurs on, and asking
// for more context or replace_all. In a file with CRLF line endings an
// old_string written with LF endings matches, and new_string gets CRLF.
// An old_string not found is an error that shows, numbered as read
// numbers lines, either the lines that hold it with different whitespace,
// or the run of lines most like it (scored by shared character pairs,
// searched near the places where its longest lines come close, so the
// search is linear in the file), at most 30 lines; or says that nothing
// looks like it. The result says what changed and where the new text now
// is, "replaced 1 occurrence in PATH (lines 12-14):" followed by those
// lines and two around them, numbered; "replaced 3 occurrences in PATH
// (lines 4, 10 and 20)"; "removed 1 occurrence from PATH (line 7):".
//
// run {command, timeout} splits command with agenttypes.SplitCommand (no
// shell: operators are refused) and runs it with Workspace.Run; timeout
// is in seconds (more than 0, at most 1,800), asking for less than the
// type's limit, never more. A refusal of the workspace (wrapping
// agenttypes.ErrRunRefused: a prefix the type does not allow, an
// untrusted project) is the tool's error, with the workspace's message. A
// command that ran is a result, failing or not:
//
//	$ go test ./...
//	exit status 1 after 2.4s
//	confinement: no network, nor this machine's sockets; writes confined to the workspace and a private temporary directory
//	output:
//	--- FAIL: TestTotal ...
//
// The status line is "exit status N after D", "timed out after D, killed
// with everything it started", or "killed after D, before it exited"; the
// confinement line says "the network and this machine's sockets may be
// reachable" or "writes not confined" where the platform could not. The output is made valid UTF-8
// and, past 64 KiB, cut to its first 16 KiB and its last 48 KiB with a
// marker between; "(no output)" when there is none.
//
// merge {agent} brings the changes of an ended child, named by its label
// or ID (Tree.ChildChanges), into the workspace with Workspace.Merge. A
// child that changed nothing gives "agent A changed no files; there is
// nothing to merge". A clean merge gives "merged the changes of agent A
// (branch B, +I -D lines) into your workspace: N files" and the files,
// one a line (at most 100). Conflicts are an error saying the workspace
// is unchanged and how to go on (make the change with edit from the
// hunks shown, or delegate the task again and merge that), then each
// conflicting file with git's reason and its hunks: at most 4 KiB of one
// file's, 24 KiB of all, 100 files. An unknown or still running child
// is the manager's error, as it words it.
package tools
