#!/bin/sh
# cudaenv shim, written by `cudaenv rehash`: selects the CUDA toolkit for the
# current directory and execs the same-named program from it.
#
# Why POSIX sh with everything inlined: /bin/sh is dash on Debian/Ubuntu and
# starts in a fraction of a millisecond, and this file opens nothing but the
# version file, /proc/self/fdinfo (NUL detection, see select.sh) and one alias
# file before the exec. bash would add ~1 ms per call and Python ~20 ms; both
# matter when a build runs nvcc thousands of times.
# @SELECT_LIB@
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
    # The selected toolkit lacks this program (another toolkit has it, which
    # is why the shim exists): run the next one of that name on PATH, as rbenv
    # does, skipping this shims directory. _CUDAENV_FALLBACK stops a loop
    # through another store's shim of the same name.
    if [ "${_CUDAENV_FALLBACK-}" != "$_ce_name" ]; then
        _cudaenv_root
        _ce_saved_ifs=$IFS
        IFS=:
        set -f
        for _ce_dir in ${PATH-}; do
            _ce_dir=${_ce_dir:-.}
            _ce_next=$_ce_dir/$_ce_name
            if [ -f "$_ce_next" ] && [ -x "$_ce_next" ] && ! [ "$_ce_next" -ef "$0" ] \
                && ! [ "$_ce_dir" -ef "$_ce_r/shims" ]; then
                IFS=$_ce_saved_ifs
                set +f
                _CUDAENV_FALLBACK=$_ce_name
                export _CUDAENV_FALLBACK
                exec "$_ce_next" "$@"
            fi
        done
        IFS=$_ce_saved_ifs
        set +f
    fi
    printf "cudaenv: '%s' is not in the selected toolkit %s (%s)\n" "$_ce_name" "$_ce_root" "$_ce_origin" >&2
    # pyenv's hint: which installed toolkits do have it (full-release aliases
    # and system, as cudaenv.inventory lists them).
    _cudaenv_root
    _ce_have=
    for _ce_alias in "$_ce_r"/aliases/*.*.* "$_ce_r"/aliases/system; do
        [ -f "$_ce_alias" ] || continue
        { IFS= read -r _ce_ar && IFS= read -r _ce_rel; } <"$_ce_alias" || continue
        case ", $_ce_have, " in *", $_ce_rel, "*) continue ;; esac
        [ -f "$_ce_ar/bin/$_ce_name" ] && [ -x "$_ce_ar/bin/$_ce_name" ] && _ce_have=${_ce_have:+$_ce_have, }$_ce_rel
    done
    [ -z "$_ce_have" ] || printf "The '%s' command exists in these toolkits: %s\n" "$_ce_name" "$_ce_have" >&2
    exit 127
fi
# A toolkit whose bin/ is this shims directory would exec this file forever.
if [ "$_ce_target" -ef "$0" ] || [ "$_ce_root/bin" -ef "$_ce_r/shims" ]; then
    printf "cudaenv: toolkit root %s points at cudaenv's own shims; fix the alias with 'cudaenv rehash'\n" \
        "$_ce_root" >&2
    exit 1
fi
_cudaenv_apply "$_ce_root"
exec "$_ce_target" "$@"
