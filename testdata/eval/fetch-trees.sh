#!/usr/bin/env bash
# Fetches the trees that the evaluation's questions name by package into
# CACHE (see README.md beside this script):
#
#   npm:<name>@<version>/<subdir>   CACHE/npm/<name>@<version>/, the package's tarball unpacked
#   deb:<package>=<version>/<subdir> CACHE/deb/<package>=<version>/, the .deb's files unpacked
#
# A tree already in CACHE is kept as it is. Nothing a package holds is run:
# npm only downloads the tarball (no install, no scripts), and dpkg -x only
# unpacks files (no maintainer scripts, no root install).
set -euo pipefail

cache=${1:?usage: fetch-trees.sh CACHE_DIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$cache"

# Each download is bounded in time; a stuck registry fails the setup.
limit=300

specs=$(grep -ho '"repo": *"\(npm\|deb\):[^"]*"' "$here"/*.jsonl |
	sed 's/^"repo": *"//; s/"$//' | sort -u)

fetch_npm() { # name@version
	local spec=$1 dest=$cache/npm/$1 tmp
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' RETURN
	if ! (cd "$tmp" && timeout "$limit" npm pack --ignore-scripts --silent "$spec" >/dev/null); then
		echo "fetch-trees: npm pack $spec failed: is the npm registry reachable?" >&2
		return 1
	fi
	mkdir -p "$tmp/tree"
	tar -xzf "$tmp"/*.tgz -C "$tmp/tree" --strip-components=1 --no-same-owner
	mkdir -p "$(dirname "$dest")"
	mv "$tmp/tree" "$dest"
}

fetch_deb() { # package=version
	local spec=$1 dest=$cache/deb/$1 tmp
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' RETURN
	if ! (cd "$tmp" && timeout "$limit" apt-get download -qq "$spec" 2>/dev/null); then
		echo "fetch-trees: apt-get download $spec failed: run apt-get update first; if it still fails, the archive no longer has that version (the questions over it are then skipped)" >&2
		return 1
	fi
	dpkg -x "$tmp"/*.deb "$tmp/tree"
	mkdir -p "$(dirname "$dest")"
	mv "$tmp/tree" "$dest"
}

status=0
for repo in $specs; do
	kind=${repo%%:*}
	rest=${repo#*:}
	case $kind in
	npm)
		# A scoped name holds a slash: @scope/name@version/subdir.
		if [[ $rest == @* ]]; then
			spec=$(echo "$rest" | cut -d/ -f1-2)
		else
			spec=${rest%%/*}
		fi
		[ -d "$cache/npm/$spec" ] || fetch_npm "$spec" || status=1
		;;
	deb)
		spec=${rest%%/*}
		[ -d "$cache/deb/$spec" ] || fetch_deb "$spec" || status=1
		;;
	esac
done
exit $status
