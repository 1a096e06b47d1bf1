#!/bin/sh
# cudaenv shim, written by `cudaenv rehash`: selects the CUDA toolkit for the
# current directory and execs the same-named program from it.
#
# Why POSIX sh with select.sh inlined: /bin/sh is dash on Debian/Ubuntu and
# starts in a fraction of a millisecond, and on the common path this file opens
# nothing but the version file, /proc/self/fdinfo (NUL detection, see
# select.sh) and one alias file before the exec. bash would add ~1 ms per call
# and Python ~20 ms; both matter when a build runs nvcc thousands of times.
# dash parses every function it is given at every call, so the rare paths
# (errors, `system`, a stale alias table, a program the selected toolkit lacks)
# live in a second file that the same rehash wrote next to the shims, sourced
# only when one of them is taken.
# @SELECT_LIB@
# The rare half (select-rare.sh and shim-rare.sh), from the absolute path
# rehash wrote it to: never a file found through the environment. Its name
# carries a hash of its content, so a shim never sources another version's.
_cudaenv_rare() {
    [ -n "${_ce_rare_loaded-}" ] && return 0
    _ce_rare_loaded=1
    if [ ! -f @RARE_FILE@ ]; then
        printf "cudaenv: %s is missing; run 'cudaenv rehash'\n" @RARE_FILE@ >&2
        exit 1
    fi
    . @RARE_FILE@
}
_ce_name=${0##*/}
if ! _cudaenv_select; then
    printf 'cudaenv: %s\n' "$_ce_err" >&2
    exit 1
fi
_cudaenv_resolve || {
    _ce_status=$?
    printf 'cudaenv: %s\n' "$_ce_err" >&2
    exit $_ce_status
}
_ce_target=$_ce_root/bin/$_ce_name
if [ ! -f "$_ce_target" ] || [ ! -x "$_ce_target" ]; then
    _cudaenv_rare
    _cudaenv_not_in_toolkit "$@"
fi
# A toolkit whose bin/ is this shims directory would exec this file forever.
if [ "$_ce_target" -ef "$0" ] || [ "$_ce_root/bin" -ef "$_ce_r/shims" ]; then
    printf "cudaenv: toolkit root %s points at cudaenv's own shims; fix the alias with 'cudaenv rehash'\n" \
        "$_ce_root" >&2
    exit 1
fi
_cudaenv_apply "$_ce_root"
exec "$_ce_target" "$@"
