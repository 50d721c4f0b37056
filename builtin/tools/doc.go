// Package tools holds the builtin read-only file tools an agent uses to
// look at its directory: read, grep, glob, ls and git.
//
// Each tool is an agenttypes.Tool. It takes the agent's directory from
// agenttypes.EnvFrom(ctx).Dir, opens it with fsroot for the call, and never
// reaches outside it. Arguments are parsed strictly: an unknown field is an
// error that lists the valid ones.
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
// pattern is RE2 (Go regexp) and matches within a line. A panic in one of
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
// above the root is not used). Flags come from a per-subcommand allow-list;
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
package tools
