// Package fsroot is troupe's file access: the one path resolver every
// builtin file tool uses, and the one way troupe opens any file it reads
// from outside.
//
// A Root wraps an os.Root, so nothing outside the agent's directory can be
// reached: paths that climb out ("../x") or name another place ("/etc")
// are refused by Resolve, and symlinks whose targets leave the root are
// refused by the operating system when opened. On top of that, Root only
// reads regular files (a named pipe, socket or device is refused without
// blocking), caps how much it reads, and walks directories without
// following symlinked directories, so a walk cannot loop.
//
// Root writes too, for the tools that change an agent's own workspace:
// Mkdir, Remove, and ReplaceFile, which replaces a file atomically (a
// temporary file renamed over it), so a reader never sees half a file
// and a hard link to the old file keeps its content. Which paths may be
// written is the caller's policy; Root only keeps every write inside.
//
// OpenBeneath opens a directory below another as a Root, reached from
// the top one: the root of an agent that works in a subdirectory of its
// workspace, which a command run there could swap for a symlink to
// elsewhere. It refuses a directory that is no longer a real one inside
// the top, and the Root keeps the directory it found; CheckDir tells a
// caller about to hand the path to another program that the path names
// something else now.
//
// Paths going in may be relative to the root or absolute inside it; paths
// coming out are always clean, slash-separated and relative to the root,
// with "." for the root itself.
//
// OpenRegular is the same refusal for files that are not an agent's:
// definitions, scripts, config, lock files and transcripts. Kind says what
// a refused file is, in words. The package imports nothing else of
// troupe, so every other package, agenttypes and manager included, can
// use it.
package fsroot
