#!/bin/sh
# esbuild as transpile.mjs runs it (ESBUILD_BINARY_PATH), held to an address space of
# $ESBUILD_ADDRESS_SPACE bytes: it runs on the host, with no cgroup of its own, and one hostile
# 64 KiB file (thousands of errors, each carrying the whole line) would take gigabytes. The binary is
# the platform package's (node_modules/@esbuild/linux-x64 or linux-arm64), as esbuild's API finds it.
for binary in "$(dirname "$0")"/node_modules/@esbuild/linux-*/bin/esbuild; do
  exec prlimit --as="$ESBUILD_ADDRESS_SPACE" -- "$binary" "$@"
done
echo "esbuild's binary for this platform is not installed (make install)" >&2
exit 1
