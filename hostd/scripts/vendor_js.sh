#!/usr/bin/env bash
# Re-fetch the dashboard's JavaScript from the npm registry at the pinned versions and copy the
# browser bundles, with their licenses, into hostd/src/hostd/web/static/vendor/. Run it after
# changing a version below, then commit the result: the package ships these files, so serving
# the dashboard never reaches a CDN or the network.
set -euo pipefail

HTMX_VERSION=2.0.11
MERMAID_VERSION=12.3.0

here="$(cd "$(dirname "$0")" && pwd)"
vendor="$here/../src/hostd/web/static/vendor"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

fetch() {  # fetch PACKAGE VERSION: unpack the registry's tarball into $work/PACKAGE
    local name="$1" version="$2"
    (cd "$work" && npm pack --silent "$name@$version" >/dev/null)
    mkdir -p "$work/$name"
    tar -xzf "$work/${name}-${version}.tgz" -C "$work/$name" --strip-components=1
}

fetch htmx.org "$HTMX_VERSION"
fetch mermaid "$MERMAID_VERSION"

rm -rf "$vendor"
mkdir -p "$vendor/htmx" "$vendor/mermaid"
cp "$work/htmx.org/dist/htmx.min.js" "$vendor/htmx/htmx.min.js"
cp "$work/htmx.org/LICENSE" "$vendor/htmx/LICENSE"
cp "$work/mermaid/dist/mermaid.min.js" "$vendor/mermaid/mermaid.min.js"
cp "$work/mermaid/LICENSE" "$vendor/mermaid/LICENSE"
printf 'htmx.org %s\nmermaid %s\n' "$HTMX_VERSION" "$MERMAID_VERSION" > "$vendor/VERSIONS"
echo "vendored into $vendor:"
cat "$vendor/VERSIONS"
