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
    _cudaenv_dot
}
# Only the rare half's first part: the shared stores' checks (_cudaenv_shared).
_cudaenv_rare_shared() {
    [ -n "${_ce_rare_loaded-}${_ce_shared_loaded-}" ] && return 0
    _ce_shared_loaded=1 _ce_rare_part=1
    _cudaenv_dot
    _ce_rare_part=
}
# (The path holds no control character: store.root() refuses one.)
_cudaenv_dot() {
    if [ ! -f @RARE_FILE@ ]; then
        printf "cudaenv: %s is missing; run 'cudaenv rehash'\n" @RARE_FILE@ >&2
        exit 1
    fi
    . @RARE_FILE@
}
# A shim follows a build to its project: see _cudaenv_find_ancestor (shim-rare.sh).
_ce_walk=1
# Does every include or library directory in nvcc's arguments that holds a
# CUDA runtime (cuda_runtime_api.h, libcudart.so, stubs/libcuda.so) hold the
# selected toolkit's own? Sets _ce_bad to the first that does not. One `case`
# per argument and a `test` per directory flag: no process.
_cudaenv_one_toolkit() {
    local a d next=
    for a; do
        if [ -n "$next" ]; then
            d=$a
            next=
        else
            case $a in
                -I | -isystem | -L | --include-path | --system-include | --library-path) next=1; continue ;;
                -isystem?*) d=${a#-isystem} ;;
                -I?* | -L?*) d=${a#-?} ;;
                --include-path=* | --system-include=* | --library-path=*) d=${a#*=} ;;
                *) continue ;;
            esac
        fi
        _ce_bad=$d
        if [ -f "$d/cuda_runtime_api.h" ]; then
            [ "$d/cuda_runtime_api.h" -ef "$_ce_root/include/cuda_runtime_api.h" ] || return 1
        elif [ -e "$d/libcudart.so" ]; then
            [ "$d/libcudart.so" -ef "$_ce_root/lib64/libcudart.so" ] ||
                [ "$d/libcudart.so" -ef "$_ce_root/lib/libcudart.so" ] || return 1
        elif [ -e "$d/libcuda.so" ] && [ "${d##*/}" = stubs ]; then
            [ "$d/libcuda.so" -ef "$_ce_root/lib64/stubs/libcuda.so" ] ||
                [ "$d/libcuda.so" -ef "$_ce_root/lib/stubs/libcuda.so" ] || return 1
        fi
    done
    _ce_bad=
}
_ce_name=${0##*/}
if ! _cudaenv_root || ! _cudaenv_select; then
    _cudaenv_rare
    _cudaenv_say "cudaenv: $_ce_err"
    exit 1
fi
_cudaenv_resolve || {
    _ce_status=$?
    _cudaenv_rare
    _cudaenv_say "cudaenv: $_ce_err"
    exit $_ce_status
}
_ce_target=$_ce_root/bin/$_ce_name
if ! [ -f "$_ce_target" -a -x "$_ce_target" ]; then
    _cudaenv_rare
    _cudaenv_not_in_toolkit "$@"
fi
# A toolkit whose bin/ is this shims directory would exec this file forever.
if [ "$_ce_target" -ef "$0" -o "$_ce_root/bin" -ef "$_ce_r/shims" ]; then
    _cudaenv_rare
    _cudaenv_own_shims
fi
# Called as $CUDAENV_ROOT/bin/<name> (bin is a link to shims/): the caller took
# the store root for a toolkit root (CUDA_HOME = dirname(dirname(which nvcc))),
# so its include/ and lib64/ come with this program, and they are the global
# selection's. One coherent toolkit or none: stop unless that is the toolkit
# selected here.
case $0 in
    */bin/"$_ce_name")
        if [ "${0%/*}" -ef "$_ce_r/shims" ] && ! [ "$_ce_r/include" -ef "$_ce_root/include" ]; then
            _cudaenv_rare
            _cudaenv_mixed_root
        fi ;;
esac
# nvcc given another toolkit's headers or libraries (-I, -isystem, -L: meson's
# /usr/local/cuda, a stale CUDA_HOME in a build file) would mix two releases.
case $_ce_name in
    nvcc)
        if ! _cudaenv_one_toolkit "$@"; then
            _cudaenv_rare
            _cudaenv_mixed_flags
        fi ;;
esac
_cudaenv_apply "$_ce_root"
[ -z "${_ce_guard-}" ] || _cudaenv_unguard
exec "$_ce_target" "$@"
