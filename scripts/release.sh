#!/usr/bin/env bash
# Release build: static binaries (cordon, cordon-helper, cordon-mcp) for
# every supported platform, with the version stamped and the paths of the
# build machine trimmed, one archive per platform holding them with the
# LICENSE, the man pages and the shell completions, and SHA256SUMS.
#
#   scripts/release.sh v0.1.0 [OUTDIR]     (default OUTDIR: dist/)
#
# It needs Go, git, GNU tar, zip and sha256sum. The archives are reproducible from the same checkout
# and Go version (-trimpath, -buildid=, fixed file times and owners).
set -euo pipefail
cd "$(dirname "$0")/.."

version=${1:-}
out=${2:-dist}
if [[ ! $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
	echo "release.sh: give the version as vMAJOR.MINOR.PATCH (e.g. v0.1.0), got '${version}'" >&2
	exit 2
fi
if [[ -n $(git status --porcelain 2>/dev/null) ]]; then
	echo "release.sh: the work tree has changes; commit or stash them first" >&2
	exit 2
fi

targets="linux/amd64 linux/arm64 darwin/arm64 darwin/amd64 windows/amd64"
ldflags="-s -w -buildid= -X github.com/cordon-sandbox/cordon/internal/cli.Version=${version}"
stamp=$(git log -1 --format=%ct 2>/dev/null || echo 0)

rm -rf "$out"
mkdir -p "$out"
docs="$out/.docs"
go run ./internal/gendoc -out "$docs"

for target in $targets; do
	goos=${target%/*} goarch=${target#*/}
	name="cordon-${version}-${goos}-${goarch}"
	dir="$out/$name"
	mkdir -p "$dir"
	ext=""
	[[ $goos == windows ]] && ext=.exe
	for cmd in cordon cordon-helper cordon-mcp; do
		CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch go build -trimpath -ldflags "$ldflags" -o "$dir/$cmd$ext" "./cmd/$cmd"
	done
	cp LICENSE README.md CHANGELOG.md SECURITY.md "$dir/"
	cp -r "$docs/man" "$docs/completions" "$dir/"
	find "$dir" -exec touch -h -d "@$stamp" {} +
	if [[ $goos == windows ]]; then
		(cd "$out" && find "$name" | sort | zip -q -X -@ "$name.zip")
	else
		tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$stamp" -C "$out" -czf "$out/$name.tar.gz" "$name"
	fi
	rm -rf "$dir"
done
rm -rf "$docs"
(cd "$out" && sha256sum -- *.tar.gz *.zip > SHA256SUMS)
echo "release.sh: $(ls "$out" | wc -l) files in $out:"
cat "$out/SHA256SUMS"
