#!/bin/sh
# esbuild as transpile.mjs runs it (ESBUILD_BINARY_PATH), held to an address space of
# $ESBUILD_ADDRESS_SPACE bytes: it runs on the host, with no cgroup of its own, and one hostile
# 64 KiB file (thousands of errors, each carrying the whole line) would take gigabytes.
exec prlimit --as="$ESBUILD_ADDRESS_SPACE" -- "$(dirname "$0")/node_modules/esbuild/bin/esbuild" "$@"
