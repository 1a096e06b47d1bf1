# cudaenv selection in shell: the same rules as cudaenv/selecting/selection.py, with
# builtins only (no sed, cat, readlink, no Python), so a shim or a prompt hook
# decides in well under a millisecond. Runs under dash (the shims), bash and
# zsh (the hooks; zsh sources it under `emulate sh`). Every variable is `local`
# (dash, bash, zsh and busybox sh all have it) so the hooks leak nothing.
#
# This file is the common path: a valid CUDAENV_VERSION or .cuda-version, an
# alias-table lookup, the environment. Everything else (errors and their
# messages, .tool-versions, sticky directories, `system`, a table stale for
# hand edits or shared stores) is in select-rare.sh. The hooks load both; a
# shim carries only this file and sources the rare one, which `cudaenv rehash`
# writes next to it, through _cudaenv_rare when it needs it: dash parses
# every function a shim defines at every call, and parsing is most of its cost.
#
# Safety: a version string is used for exactly one thing, the file name
# $CUDAENV_ROOT/aliases/<spec>, and only after it matched the grammar below. It
# is never evaluated, never globbed (only ever expanded in double quotes or as
# a `case` subject) and never joined into a path before that check.
#
# Functions set these globals for their caller:
#   _ce_spec    the validated spec          _ce_source  CUDAENV_VERSION, a file path, or "default"
#   _ce_root    the selected toolkit root   _ce_origin  "set by ...", for messages (_cudaenv_origin)
#   _ce_err     the one-line error (without "cudaenv: ")
#   _ce_warn    with _ce_collect_warn set, warnings for the caller to print

_ce_tab='	'
_ce_cr=@CR@  # a carriage return, filled in by cudaenv (editors mangle a literal one)

# The CUDAENV_ROOT the shims and hooks use, without trailing slashes, into
# _ce_r: each entry point (a shim's main part, the hook) runs this first, and
# the functions below read _ce_r. A value
# that is not absolute (`~/store` too: nothing expands it) would name another
# store in every directory, a cloned repository's among them: status 1 and
# _ce_err, as store.root() refuses it.
_cudaenv_root() {
    _ce_r=${CUDAENV_ROOT:-@DEFAULT_ROOT@}
    while :; do
        case $_ce_r in
            ?*/) _ce_r=${_ce_r%/} ;;
            /*) return 0 ;;
            *) break ;;
        esac
    done
    _cudaenv_rare
    _cudaenv_root_not_absolute
}

# The global version file into _ce_global: $CUDAENV_VERSION_FILE (a user's own
# on a shared store; absolute, as in store.py) or $CUDAENV_ROOT/version.
_cudaenv_global_file() {
    _ce_global=${CUDAENV_VERSION_FILE:-$_ce_r/version}
    case $_ce_global in
        /*) return 0 ;;
    esac
    _cudaenv_rare
    _cudaenv_version_file_not_absolute
}

# $1 with spaces and tabs trimmed on both sides, into _ce_trimmed.
_cudaenv_trim() {
    _ce_trimmed=${1#"${1%%[!" $_ce_tab"]*}"}
    _ce_trimmed=${_ce_trimmed%"${_ce_trimmed##*[!" $_ce_tab"]}"}
}

# Is $1 a valid spec? The grammar of cudaenv/foundation/versions.py: `system`, or one to
# three dot-separated numbers of 1-4 ASCII digits without leading zeros, at
# most @MAX_SPEC_LEN@ characters. Digits are listed one by one: a [0-9] range
# may match other digits in some locales.
_cudaenv_valid_spec() {
    case $((${#1} > @MAX_SPEC_LEN@)) in 1) return 1 ;; esac
    case $1 in
        system) return 0 ;;
        '' | *[!0123456789.]* | .* | *. | *..* | *.*.*.* ) return 1 ;;
        0[0123456789]* | *.0[0123456789]*) return 1 ;;
        *[0123456789][0123456789][0123456789][0123456789][0123456789]*) return 1 ;;
    esac
    return 0
}

# The byte offset of fd 9, into _ce_pos. Why: dash's and bash's `read` drop NUL
# bytes without a trace ("13<NUL>.0" reads as "13.0"), but the kernel's file
# offset still counts them. Comparing the offset with the bytes `read` returned
# reveals a dropped byte, with one more builtin `read` and no process; an
# external `od` or `cmp` would cost ~1 ms.
_cudaenv_fd9_pos() {
    _ce_pos=
    IFS= read -r _ce_pos </proc/self/fdinfo/9 || return 1
    _ce_pos=${_ce_pos#pos:}
    _ce_pos=${_ce_pos#"$_ce_tab"}
    case $_ce_pos in '' | *[!0123456789]*) return 1 ;; esac
}

# bash can stop a `read` after N bytes; dash cannot (its `read` goes on to the
# newline), and zsh replaces _cudaenv_line9 with one that uses sysread.
_ce_read_n=${BASH_VERSION:+1}
# Do this shell's reads of a version file stop at the bound? Where they do not
# (dash), _cudaenv_read_version learns the file's size before it reads a byte.
_ce_bounded=$_ce_read_n

# One line of fd 9 into _ce_l, status 1 at the end of the file (as `read`),
# reading at most $1 bytes where the shell allows. A line cut there returns 0
# with no newline read: it counts one byte too many, which only happens past
# the size bound anyway.
_cudaenv_line9() {
    IFS= read -r ${_ce_read_n:+-n "$1"} _ce_l <&9
}

# The version file $1 (.cuda-version or .tool-versions): the spec into _ce_spec
# and its line into _ce_line, or _ce_err and status 1 (2: a .tool-versions
# without a cuda line).
_cudaenv_read_version() {
    _ce_big=
    if [ -z "${_ce_nul-}" -a -f "$1" -a -r "$1" ]; then
        if [ -z "$_ce_bounded" ] && ! _cudaenv_size_known "$1"; then
            _cudaenv_rare
            if ! _cudaenv_size_check "$1"; then
                _cudaenv_too_large "$1"
                return 1
            fi
        fi
        # Another user's directory: they can swap the file for a FIFO between the test
        # above and the open, which waits for a writer (_cudaenv_guard bounds that).
        [ -O "${1%/*}" -o -n "${_ce_noguard-}" ] || { _cudaenv_rare; _cudaenv_guard "$1"; }
        case $1 in
            */.tool-versions) ;;
            *) _cudaenv_quick_fd9 2>/dev/null 9<"$1" && return 0 ;;
        esac
    fi
    _cudaenv_rare
    # The quick pass counted past the size bound. The full scan judges the size before
    # anything else, so it would say the same after reading the file again: dash's `read`
    # has no bound, and a 1 MiB line costs a million read calls per pass.
    if [ -n "$_ce_big" ]; then
        _cudaenv_too_large "$1"
        return 1
    fi
    _cudaenv_read_slow "$1"
}

# Is version file $1 known to be within the bound, without reading it? dash's
# `read` takes a line to its newline one read(2) at a time (a 1 MB line costs
# 0.25 s), and the process that measures a file (_cudaenv_size_check) would
# cost every shim run ~0.7 ms. So the measure leaves a stamp, our own, at the
# file's own path under $CUDAENV_ROOT/@SIZE_STAMPS@, dated exactly as the file
# was: a file changed since, or dated back (its owner can set any time), has
# another time and is measured again. Only our own files get one: another
# user's is measured at every run, as its owner could date a new one exactly
# as the old. A stamp only spares the measure; the readers still count every
# byte, so a wrong one costs time, never a different answer. A path with a .
# or .. component or a // gets none. Sets _ce_stamp, the stamp's path (empty
# for none), which _cudaenv_size_check writes.
_cudaenv_size_known() {
    _ce_stamp=
    case $1 in */./* | */../* | *//* | */. | */..) return 1 ;; esac
    _ce_stamp=$_ce_r/@SIZE_STAMPS@$1
    [ -O "$1" -a -O "$_ce_stamp" ] && ! [ "$1" -nt "$_ce_stamp" -o "$1" -ot "$_ce_stamp" ]
}

# The common version file, read in one pass on fd 9 (with `case` for the
# tests: syntax, where `[` is a command, which costs dash twice as much): comment lines, one valid
# version, nothing past the bounds (@MAX_BYTES@ bytes, @MAX_LINES@ lines, lines
# of @MAX_LINE@ bytes up to the value), no byte that `read` dropped. Status 0
# only when _cudaenv_scan_fd9 (select-rare.sh) would select the same spec at
# the same line; anything else, error or doubt, is status 1, and the full
# scan decides, with its message.
_cudaenv_quick_fd9() {
    local LC_ALL=C  # bash: ${#x} counts bytes, not characters
    local line nl count=0 lineno=0 spec= at=
    while :; do
        nl=1
        _cudaenv_line9 $((@MAX_BYTES@ + 1 - count)) || nl=0
        line=$_ce_l
        case $nl$line in 0) break ;; esac  # the end of the file
        count=$((count + ${#line} + nl))
        lineno=$((lineno + 1))
        case $((count > @MAX_BYTES@ || lineno > @MAX_LINES@)) in 1) _ce_big=1; return 1 ;; esac
        # Decided already, or a comment line (most lines before the value):
        # nothing more to check here, as in _cudaenv_scan_fd9.
        case $spec in ?*) case $nl in 1) continue ;; esac; break ;; esac
        case $line in
            '#'*) case $((${#line} > @MAX_LINE@)) in 0) case $nl in 1) continue ;; esac; break ;; esac ;;
        esac
        line=${line%"$_ce_cr"}
        case $((${#line} > @MAX_LINE@)) in 1) return 1 ;; esac
        _cudaenv_trim "${line%%#*}"
        case $_ce_trimmed in
            ?*)
                _cudaenv_valid_spec "$_ce_trimmed" || return 1
                spec=$_ce_trimmed
                at=$lineno ;;
        esac
        case $nl in 1) ;; *) break ;; esac
    done
    case $spec in '') return 1 ;; esac
    _cudaenv_fd9_pos || return 1
    case $_ce_pos in "$count") ;; *) return 1 ;; esac
    _ce_spec=$spec
    _ce_line=$at
}

# Does $1 exist in any form (a dangling symlink too)?
_cudaenv_exists() {
    [ -e "$1" ] || [ -h "$1" ]
}

# The nearest version file from $PWD up to /, into _ce_file (empty if none):
# in each directory .cuda-version, else a .tool-versions with a cuda line.
# Any kind of file counts (a directory or a FIFO is an error, not skipped),
# except another user's in a world-writable sticky directory (see
# _cudaenv_foreign). A .tool-versions or a sticky directory is left to
# _cudaenv_find_in (select-rare.sh).
_cudaenv_find_file() {
    local d
    _ce_warn=
    d=${PWD:-/}
    d=${d%/}
    while :; do
        # One `test` per directory for the common case, neither file there
        # (this loop runs at every prompt and shim call); -h as well as -e, as
        # a dangling symlink counts too. Paths start with "/", so no operand
        # can be taken for an operator.
        if [ -e "$d/.cuda-version" -o -h "$d/.cuda-version" -o -e "$d/.tool-versions" -o -h "$d/.tool-versions" ]; then
            if [ ! -k "${d:-/}" ] && [ -e "$d/.cuda-version" -o -h "$d/.cuda-version" ]; then
                _ce_file=$d/.cuda-version
                return 0
            fi
            _cudaenv_rare
            _cudaenv_find_in "$d" && return 0
        fi
        case $d in '') break ;; esac
        d=${d%/*}
    done
    _ce_file=
    return 1
}

# The selection by precedence. Sets _ce_spec and _ce_source; on a bad value
# sets _ce_err and returns 1. A shim (_ce_walk set) that finds no version file
# from its own directory looks in its ancestor processes' (shim-rare.sh) before
# the global one.
_cudaenv_select() {
    _ce_trimmed=
    case ${CUDAENV_VERSION-} in *[!" $_ce_tab"]*) _cudaenv_trim "$CUDAENV_VERSION" ;; esac
    if [ -n "$_ce_trimmed" ]; then
        _ce_source=CUDAENV_VERSION
        if ! _cudaenv_valid_spec "$_ce_trimmed"; then
            _cudaenv_rare
            _cudaenv_env_invalid
            return 1
        fi
        _ce_spec=$_ce_trimmed
        return 0
    fi
    if _cudaenv_find_file || { [ -n "${_ce_walk-}" ] && _cudaenv_rare && _cudaenv_find_ancestor; }; then
        _ce_source=$_ce_file
        _cudaenv_read_version "$_ce_file"
        return
    fi
    _cudaenv_global_file || return 1
    if _cudaenv_exists "$_ce_global"; then
        _ce_source=$_ce_global
        _cudaenv_read_version "$_ce_source"
        return
    fi
    # None of the user's own: a shared store's global version is the default (select-rare.sh).
    if [ -n "${CUDAENV_SHARED_ROOTS-}" ]; then _cudaenv_rare; _cudaenv_select_shared; return; fi
    _ce_source=default
    _ce_spec=system
}

# The toolkit root for _ce_spec, into _ce_root. On failure sets _ce_err and
# returns 127, like cudaenv.selecting.selection.locate (1 for a bad CUDAENV_SHARED_ROOTS).
_cudaenv_resolve() {
    _ce_root=
    case $_ce_spec in
        system)
            _cudaenv_rare
            _cudaenv_system_root && return 0 ;;
    esac
    # A toolkit copied into or deleted from versions/ by hand since the last
    # rehash: one `test -nt`, and only then a listing of versions/.
    if [ "$_ce_r/versions" -nt "$_ce_r/aliases" ] && _cudaenv_rare && _cudaenv_scan_versions; then
        return 0
    fi
    _cudaenv_shared || return 1
    if [ -n "$_ce_stale" ]; then
        _cudaenv_rare
        _cudaenv_resolve_stale && return 0
    # The alias table: one file per accepted spec, its first line the root.
    elif [ -f "$_ce_r/aliases/$_ce_spec" ]; then
        IFS= read -r _ce_root <"$_ce_r/aliases/$_ce_spec" || :
        case $_ce_root in ?*) [ -d "$_ce_root/bin" ] && return 0 ;; esac
        _ce_root=
    fi
    _cudaenv_rare
    _cudaenv_not_installed
}

# CUDAENV_SHARED_ROOTS: read-only stores whose toolkits the user's rehash
# folds into the user's one alias table (cudaenv/selecting/shared_roots.py).
# Sets _ce_shared (the list without empty entries and trailing slashes) and
# _ce_stale (the table is stale: built for another list, or older than a
# shared store's versions/); on a bad entry _ce_err, status 1. Without shared
# stores, one `test`; with them, _cudaenv_shared_stale, the first part of the
# rare half (_cudaenv_rare_shared: a shim under shared stores parses no more
# than this code inlined, and none of the rest of that file).
_cudaenv_shared() {
    _ce_stale=
    _ce_shared=
    case ${CUDAENV_SHARED_ROOTS-} in
        '')
            [ -e "$_ce_r/aliases/.shared-roots" ] && _ce_stale=1
            return 0 ;;
    esac
    _cudaenv_rare_shared
    _cudaenv_shared_stale
}

# Drop the first occurrence of $2 from the colon list $1 (and empty entries,
# as environment.py does), into _ce_list. Field splitting with IFS=: and
# globbing off: dash's ${x%%:*} pattern removal made the loop ten times slower.
_cudaenv_list_without() {
    local entry drop IFS noglob
    _ce_list=
    drop=$2
    case $- in *f*) noglob=1 ;; *) noglob= ;; esac
    set -f
    IFS=:
    for entry in $1; do
        [ -z "$entry" ] && continue
        if [ -n "$drop" ] && [ "x$entry" = "x$drop" ]; then
            drop=
            continue
        fi
        _ce_list=${_ce_list:+$_ce_list:}$entry
    done
    [ -n "$noglob" ] || set +f
}

# Export the environment of toolkit $1 (cudaenv/selecting/activation.py is the reference).
_cudaenv_apply() {
    local lib
    export CUDA_HOME="$1" CUDA_PATH="$1" CUDAToolkit_ROOT="$1" CUDACXX="$1/bin/nvcc"
    case ":${PATH-}:" in
        # Nothing to drop (the common case in a shim): no loop needed.
        *::* | *":${CUDAENV_PATH_ENTRY-}:"*) _cudaenv_list_without "${PATH-}" "${CUDAENV_PATH_ENTRY-}" ;;
        *) _ce_list=$PATH ;;
    esac
    export PATH="$1/bin${_ce_list:+:$_ce_list}" CUDAENV_PATH_ENTRY="$1/bin"
    case ${CUDAENV_LD_LIBRARY_PATH-} in
        0) ;;
        *)
            lib=$1/lib
            [ -d "$1/lib64" ] && lib=$1/lib64
            case ":${LD_LIBRARY_PATH-}:" in
                ::) _ce_list= ;;
                *::* | *":${CUDAENV_LD_ENTRY-}:"*) _cudaenv_list_without "${LD_LIBRARY_PATH-}" "${CUDAENV_LD_ENTRY-}" ;;
                *) _ce_list=$LD_LIBRARY_PATH ;;
            esac
            export LD_LIBRARY_PATH="$lib${_ce_list:+:$_ce_list}" CUDAENV_LD_ENTRY="$lib" ;;
    esac
    # A host compiler to apply or one to take away (the rare half, hostcc.py): one `test`
    # when the toolkit needs none, as most do.
    if [ -n "${CUDAENV_CCBIN-}" -o -f "$_ce_r/host-compiler/$_ce_spec" ]; then
        _cudaenv_rare
        _cudaenv_host_compiler "$1"
    fi
}
