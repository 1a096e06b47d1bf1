# cudaenv selection in shell: the same rules as cudaenv/selection.py, with
# builtins only (no sed, cat, readlink, no Python), so a shim or a prompt hook
# decides in well under a millisecond. Runs under dash (the shims), bash and
# zsh (the hooks; zsh sources it under `emulate sh`). Every variable is `local`
# (dash, bash, zsh and busybox sh all have it) so the hooks leak nothing.
#
# Safety: a version string is used for exactly one thing, the file name
# $CUDAENV_ROOT/aliases/<spec>, and only after it matched the grammar below. It
# is never evaluated, never globbed (only ever expanded in double quotes or as
# a `case` subject) and never joined into a path before that check.
#
# Functions set these globals for their caller:
#   _ce_spec    the validated spec          _ce_source  CUDAENV_VERSION, a file path, or "default"
#   _ce_root    the selected toolkit root   _ce_origin  "set by ...", for messages
#   _ce_err     the one-line error (without "cudaenv: ")
#   _ce_warn    with _ce_collect_warn set, warnings for the caller to print

_ce_allowed=@ALLOWED@
# Printable ASCII: values holding anything else are not echoed back verbatim,
# so a crafted file cannot put escape sequences on the user's terminal.
_ce_printable=' !"#$%&'\''()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\]^_`abcdefghijklmnopqrstuvwxyz{|}~'
_ce_tab='	'
_ce_cr=@CR@  # a carriage return, filled in by cudaenv (editors mangle a literal one)

# The CUDAENV_ROOT the shims and hooks use, without trailing slashes.
_cudaenv_root() {
    _ce_r=${CUDAENV_ROOT:-@DEFAULT_ROOT@}
    while :; do
        case $_ce_r in
            ?*/) _ce_r=${_ce_r%/} ;;
            *) break ;;
        esac
    done
}

# The global version file into _ce_global: $CUDAENV_VERSION_FILE (a user's own
# on a shared store; absolute, as in store.py) or $CUDAENV_ROOT/version.
_cudaenv_global_file() {
    _cudaenv_root
    _ce_global=${CUDAENV_VERSION_FILE:-$_ce_r/version}
    case $_ce_global in
        /*) return 0 ;;
    esac
    _cudaenv_describe "$CUDAENV_VERSION_FILE"
    _ce_err="CUDAENV_VERSION_FILE must be an absolute path, not $_ce_shown"
    return 1
}

# $1 with spaces and tabs trimmed on both sides, into _ce_trimmed.
_cudaenv_trim() {
    _ce_trimmed=${1#"${1%%[!" $_ce_tab"]*}"}
    _ce_trimmed=${_ce_trimmed%"${_ce_trimmed##*[!" $_ce_tab"]}"}
}

# Is $1 a valid spec? The grammar of cudaenv/versions.py: `system`, or one to
# three dot-separated numbers of 1-4 ASCII digits without leading zeros. Digits
# are listed one by one: a [0-9] range may match other digits in some locales.
_cudaenv_valid_spec() {
    case $1 in
        system) return 0 ;;
        '' | *[!0123456789.]* | .* | *. | *..* | *.*.*.* ) return 1 ;;
        0[0123456789]* | *.0[0123456789]*) return 1 ;;
        *[0123456789][0123456789][0123456789][0123456789][0123456789]*) return 1 ;;
    esac
    return 0
}

# A grammar error: what is wrong, and what would be right.
_cudaenv_invalid() {
    _ce_err="$1; allowed are $_ce_allowed"
}

# A bounded, printable rendering of an untrusted value (like versions.describe).
_cudaenv_describe() {
    case $1 in
        *[!"$_ce_printable"]*) _ce_shown="(a value with control or non-ASCII bytes)" ;;
        *)
            if [ ${#1} -gt 40 ]; then
                _ce_shown=$1
                while [ ${#_ce_shown} -gt 40 ]; do _ce_shown=${_ce_shown%?}; done
                _ce_shown="'$_ce_shown...'"
            else
                _ce_shown="'$1'"
            fi
            ;;
    esac
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

# One line of fd 9 into _ce_l, status 1 at the end of the file (as `read`),
# reading at most $1 bytes where the shell allows. A line cut there returns 0
# with no newline read: it counts one byte too many, which only happens past
# the size bound anyway.
_cudaenv_line9() {
    IFS= read -r ${_ce_read_n:+-n "$1"} _ce_l <&9
}

# Version files are at most @MAX_BYTES@ bytes in at most @MAX_LINES@ lines (the
# whole file, as cudaenv/selection.py reads it): reading stops as soon as
# either is passed, so no file costs more than that to look at.
_cudaenv_too_large() {
    _ce_err="$1: version file too large; allowed are at most @MAX_BYTES@ bytes in at most @MAX_LINES@ lines"
}

# Read the version file $1 (already opened on fd 9 by the caller), all of it up
# to the bound. Sets _ce_spec and _ce_line, or _ce_err and returns 1. Lines up
# to the value are checked; what follows only counts towards the size.
# With $2 = tool, $1 is a .tool-versions: only its `cuda <version>` line counts,
# and a file without one returns 2 (the walk up goes on, as asdf's does).
# With $3 = careful, each line's length comes from the file offset (slower, one
# more read per line): used only when the fast pass found bytes that `read`
# dropped, to tell which line holds the NUL.
_cudaenv_scan_fd9() {
    local LC_ALL=C  # bash/zsh: ${#x} counts bytes, not characters
    local line value rest nl len count=0 lineno=0 err= spec= at= quick=
    # Lengths from `read` are exact where NUL bytes are not dropped (zsh), or
    # checked against the offset at the end (the fast pass of dash and bash).
    [ "${3-}" != careful ] && [ -z "${_ce_nul-}" ] && quick=1
    while :; do
        nl=1
        _cudaenv_line9 $((@MAX_BYTES@ + 1 - count)) || nl=0
        line=$_ce_l
        if [ "${3-}" = careful ]; then
            _cudaenv_fd9_pos || { _ce_err="$1: cannot check the version file (needs /proc/self/fdinfo)"; return 1; }
            # At the end of the file, a last line of only NUL bytes reads as empty.
            [ $nl = 0 ] && [ -z "$line" ] && [ "$_ce_pos" = "$count" ] && break
            len=$((_ce_pos - count - nl))
            count=$_ce_pos
        else
            [ $nl = 0 ] && [ -z "$line" ] && break
            len=${#line}
            count=$((count + len + nl))
        fi
        lineno=$((lineno + 1))
        if [ $count -gt @MAX_BYTES@ ] || [ $lineno -gt @MAX_LINES@ ]; then
            _cudaenv_too_large "$1"
            return 1
        fi
        # Decided already: the rest only counts towards the size.
        [ -n "$err$spec" ] && { [ $nl = 1 ] && continue || break; }
        # A whole-line comment within the length limit needs nothing more in
        # the fast pass (the common line before the value): a NUL byte dropped
        # from it shows in the offset check after the loop.
        case $line in
            '#'*) [ -n "$quick" ] && [ $len -le @MAX_LINE@ ] && { [ $nl = 1 ] && continue || break; } ;;
        esac
        rest=${line%"$_ce_cr"}
        [ "$rest" != "$line" ] && len=$((len - 1))
        if [ $len -gt @MAX_LINE@ ]; then
            _cudaenv_invalid "$1:$lineno: line is longer than @MAX_LINE@ bytes"
            err=$_ce_err
        # A byte went missing (dash, bash), or zsh kept the NUL in the value.
        elif [ ${#rest} -ne $len ] || { [ -n "${_ce_nul-}" ] && _cudaenv_has_nul "$line"; }; then
            _cudaenv_invalid "$1:$lineno: NUL byte in version file"
            err=$_ce_err
        else
            value=${rest%%#*}
            _cudaenv_trim "$value"
            value=$_ce_trimmed
            if [ "${2-}" = tool ]; then
                case $value in
                    cuda)
                        _cudaenv_invalid "$1:$lineno: the cuda line names no version"
                        err=$_ce_err
                        value= ;;
                    cuda[" $_ce_tab"]*)
                        _cudaenv_trim "${value#cuda}"
                        value=${_ce_trimmed%%[" $_ce_tab"]*} ;;
                    *) value= ;;
                esac
            fi
            if [ -z "$value" ]; then
                :
            elif [ ${#value} -gt @MAX_SPEC_LEN@ ] || ! _cudaenv_valid_spec "$value"; then
                _cudaenv_describe "$value"
                _cudaenv_invalid "$1:$lineno: invalid version $_ce_shown"
                err=$_ce_err
            else
                spec=$value
                at=$lineno
            fi
        fi
        [ $nl = 1 ] || break
    done
    # dash and bash drop NUL bytes: if the offset is past the bytes counted,
    # read again, carefully, to find the line that holds one (zsh keeps them).
    if [ "${3-}" != careful ] && [ -z "${_ce_nul-}" ]; then
        _cudaenv_fd9_pos || { _ce_err="$1: cannot check the version file (needs /proc/self/fdinfo)"; return 1; }
        if [ "$_ce_pos" != "$count" ]; then
            _cudaenv_scan_fd9 "$1" "${2-}" careful 9<"$1"
            return
        fi
    fi
    if [ -n "$err" ]; then
        _ce_err=$err
        return 1
    fi
    if [ -n "$spec" ]; then
        _ce_spec=$spec
        _ce_line=$at
        return 0
    fi
    if [ "${2-}" = tool ]; then
        _cudaenv_invalid "$1: no cuda line"
        return 2
    fi
    _cudaenv_invalid "$1: no version found (the file is empty or only comments)"
    return 1
}

# zsh keeps NUL bytes in variables; the zsh hook sets _ce_nul to one.
_cudaenv_has_nul() {
    case $1 in *"$_ce_nul"*) return 0 ;; esac
    return 1
}

# Does $1 exist in any form (a dangling symlink too)?
_cudaenv_exists() {
    [ -e "$1" ] || [ -h "$1" ]
}

# A version file must be a regular file: say what $1 is instead. Tested before
# opening it, so a FIFO is never opened (that would wait for a writer).
_cudaenv_not_regular() {
    local what="not a regular file"
    if [ -h "$1" ] && [ ! -e "$1" ]; then
        what="a symbolic link that leads nowhere (dangling or a loop)"
    elif [ -d "$1" ]; then
        what="a directory"
    elif [ -p "$1" ]; then
        what="a FIFO"
    elif [ -c "$1" ] || [ -b "$1" ]; then
        what="a device"
    elif [ -S "$1" ]; then
        what="a socket"
    fi
    _ce_err="$1: $what, not a regular file; a version file must be a regular file"
}

_cudaenv_read_version() {
    if [ ! -f "$1" ]; then
        _cudaenv_not_regular "$1"
        return 1
    fi
    if [ ! -r "$1" ]; then
        _ce_err="$1: cannot read version file: Permission denied"
        return 1
    fi
    case $1 in
        */.tool-versions) _cudaenv_scan_fd9 "$1" tool 9<"$1" ;;
        *) _cudaenv_scan_fd9 "$1" 9<"$1" ;;
    esac
}

# Is version file $2 in directory $1 one to ignore: another user's (not root's)
# in a world-writable sticky directory such as /tmp, where anyone can put one?
# Warns (see below). The common case costs one stat (the -k test);
# only a sticky directory holding a file that is not plainly ours costs one
# `stat` process, as no shell builtin tells a file's owner.
_cudaenv_foreign() {
    local dir file out
    dir=${1:-/}
    file=$2
    [ -k "$dir" ] || return 1
    [ -O "$file" ] && [ ! -h "$file" ] && return 1
    # The owner of /proc/self is our effective user.
    out=$(command stat -c '%a %u' -- "$dir" "$file" /proc/self 2>/dev/null) || return 1
    set -- $out
    [ $# = 6 ] || return 1
    case $1 in *[2367]) ;; *) return 1 ;; esac  # the "others" digit has the write bit
    [ "$4" = 0 ] || [ "$4" = "$6" ] && return 1
    out="cudaenv: warning: ignoring $file: it belongs to another user (uid $4) and sits in the world-writable directory $dir"
    # A shim says so at once; the prompt hook collects it, to say it once and not at every prompt.
    if [ -n "${_ce_collect_warn-}" ]; then
        _ce_warn="${_ce_warn:+$_ce_warn
}$out"
    else
        printf '%s\n' "$out" >&2
    fi
    return 0
}

# The nearest version file from $PWD up to /, into _ce_file (empty if none):
# in each directory .cuda-version, else a .tool-versions with a cuda line.
# Any kind of file counts (a directory or a FIFO is an error, not skipped),
# except another user's in a world-writable sticky directory (see above).
_cudaenv_find_file() {
    local d f
    _ce_warn=
    d=${PWD:-/}
    d=${d%/}
    while :; do
        # One `test` per directory for the common case, neither file there
        # (this loop runs at every prompt and shim call); -h as well as -e, as
        # a dangling symlink counts too. Paths start with "/", so no operand
        # can be taken for an operator.
        if [ -e "$d/.cuda-version" -o -h "$d/.cuda-version" -o -e "$d/.tool-versions" -o -h "$d/.tool-versions" ]; then
            # Only a sticky directory (-k) can hold a file to ignore.
            f=$d/.cuda-version
            if [ -e "$f" -o -h "$f" ] && { [ ! -k "${d:-/}" ] || ! _cudaenv_foreign "$d" "$f"; }; then
                _ce_file=$f
                return 0
            fi
            f=$d/.tool-versions
            if [ -e "$f" -o -h "$f" ] && { [ ! -k "${d:-/}" ] || ! _cudaenv_foreign "$d" "$f"; }; then
                _cudaenv_read_version "$f"
                if [ $? != 2 ]; then
                    _ce_file=$f
                    return 0
                fi
            fi
        fi
        [ -z "$d" ] && break
        d=${d%/*}
    done
    _ce_file=
    return 1
}

# The selection by precedence. Sets _ce_spec and _ce_source; on a bad value
# sets _ce_err and returns 1.
_cudaenv_select() {
    _cudaenv_trim "${CUDAENV_VERSION-}"
    if [ -n "$_ce_trimmed" ]; then
        _ce_source=CUDAENV_VERSION
        if [ ${#_ce_trimmed} -gt @MAX_SPEC_LEN@ ] || ! _cudaenv_valid_spec "$_ce_trimmed"; then
            _cudaenv_describe "$_ce_trimmed"
            _cudaenv_invalid "CUDAENV_VERSION: invalid version $_ce_shown"
            return 1
        fi
        _ce_spec=$_ce_trimmed
        return 0
    fi
    if _cudaenv_find_file; then
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
    _ce_source=default
    _ce_spec=system
}

# The toolkit root for _ce_spec, into _ce_root. On failure sets _ce_err and
# returns 127, like cudaenv.selection.locate (1 for a bad CUDAENV_SHARED_ROOTS).
_cudaenv_resolve() {
    local entry dir added IFS=: noglob
    case $_ce_source in
        CUDAENV_VERSION) _ce_origin="set by CUDAENV_VERSION" ;;
        default) _ce_origin="default: no .cuda-version or global version file" ;;
        *) _ce_origin="set by $_ce_source" ;;
    esac
    _cudaenv_root
    added=${CUDAENV_PATH_ENTRY:-$_ce_r}
    _ce_root=
    if [ "$_ce_spec" = system ]; then
        # What the user's shell has right now comes first: conda, then PATH.
        if [ -n "${CONDA_PREFIX-}" ] && [ -x "$CONDA_PREFIX/bin/nvcc" ]; then
            _ce_root=$CONDA_PREFIX
            return 0
        fi
        _cudaenv_list_without "${PATH-}" ""
        case $- in *f*) noglob=1 ;; *) noglob= ;; esac
        set -f
        for entry in $_ce_list; do
            while :; do case $entry in ?*/) entry=${entry%/} ;; *) break ;; esac; done
            # A relative entry names another directory in every cwd (a cloned
            # repository's bin/ among them): never a toolkit root, as in discover.py.
            case $entry in
                '' | [!/]* | "$_ce_r" | "$_ce_r"/* | "$added") continue ;;
            esac
            # A toolkit's bin/, not a wrapper such as /usr/local/bin/nvcc:
            # its parent must hold the runtime headers (as discover.py checks).
            if [ -f "$entry/nvcc" ] && [ -x "$entry/nvcc" ] && [ -f "$entry/../include/cuda_runtime.h" ]; then
                case $entry in
                    */*) dir=${entry%/*} ;;
                    *) dir=. ;;
                esac
                _ce_root=${dir:-/}
                break
            fi
        done
        [ -n "$noglob" ] || set +f
        [ -n "$_ce_root" ] && return 0
    fi
    # A toolkit copied into or deleted from versions/ by hand since the last
    # rehash: one `test -nt`, and only then a listing of versions/.
    if [ "$_ce_r/versions" -nt "$_ce_r/aliases" ] && _cudaenv_scan_versions; then
        return 0
    fi
    _cudaenv_shared || return 1
    if [ -n "$_ce_stale" ]; then
        _cudaenv_resolve_stale && return 0
    # The alias table: one file per accepted spec, its first line the root.
    elif [ -f "$_ce_r/aliases/$_ce_spec" ]; then
        IFS= read -r _ce_root <"$_ce_r/aliases/$_ce_spec" || :
        if [ -n "$_ce_root" ] && [ -d "$_ce_root/bin" ]; then
            return 0
        fi
        _ce_root=
    fi
    if [ "$_ce_spec" = system ]; then
        _ce_err="no system CUDA toolkit found ($_ce_origin); install one with 'cudaenv install <version>' and select it with 'cudaenv local <version>'"
    else
        _ce_err="version '$_ce_spec' ($_ce_origin) is not installed; run: cudaenv install $_ce_spec"
    fi
    return 127
}

# The newest managed toolkit in versions/ that _ce_spec matches, into
# _ce_root, ranked as cudaenv.aliases.build ranks them; status 1 when none
# does. Only X.Y.Z directory names without leading zeros count, as in
# store.managed_toolkits.
_cudaenv_scan_versions() {
    local d rel rest maj min pat bmaj=-1 bmin=-1 bpat=-1 best= noglob
    [ "$_ce_spec" = system ] && return 1
    case $- in *f*) noglob=1 ;; *) noglob= ;; esac
    set +f
    for d in "$_ce_r"/versions/*; do
        rel=${d##*/}
        case $rel in
            *[!0-9.]* | .* | *. | *..* | 0[0-9]* | *.0[0-9]*) continue ;;
        esac
        maj=${rel%%.*}
        rest=${rel#*.}
        case $rest in "$rel" | *.*.*) continue ;; *.*) ;; *) continue ;; esac
        min=${rest%%.*}
        pat=${rest#*.}
        case $_ce_spec in "$rel" | "$maj.$min" | "$maj") ;; *) continue ;; esac
        [ -d "$d/bin" ] || continue
        if [ "$maj" -gt "$bmaj" ] || { [ "$maj" -eq "$bmaj" ] && { [ "$min" -gt "$bmin" ] ||
            { [ "$min" -eq "$bmin" ] && [ "$pat" -gt "$bpat" ]; }; }; }; then
            best=$d bmaj=$maj bmin=$min bpat=$pat
        fi
    done
    [ -z "$noglob" ] || set -f
    [ -n "$best" ] || return 1
    _ce_root=$best
}

# CUDAENV_SHARED_ROOTS: read-only stores whose toolkits the user's rehash
# folds into the user's one alias table (cudaenv/shared_roots.py). Checks each
# entry (absolute, printable ASCII) and whether that table is stale: built for
# another list (aliases/.shared-roots records it) or older than a shared
# store's versions/ (an admin added or removed a toolkit). A few `test`
# builtins per store, no process. Sets _ce_shared (the list without empty
# entries and trailing slashes) and _ce_stale; on a bad entry _ce_err, status 1.
_cudaenv_shared() {
    local entry list= marker= noglob IFS chars= bad=
    _ce_stale=
    _ce_shared=
    if [ -z "${CUDAENV_SHARED_ROOTS-}" ]; then
        [ -e "$_ce_r/aliases/.shared-roots" ] && _ce_stale=1
        return 0
    fi
    # The character check is the costly part (~30 µs a pattern in bash): once
    # for the whole value, per entry only when it fails, and not at all while
    # the value is the one a hook in this shell checked before.
    if [ "x${_ce_shared_checked-}" != "x$CUDAENV_SHARED_ROOTS" ]; then
        case $CUDAENV_SHARED_ROOTS in *[!"$_ce_printable"]*) chars=1 ;; esac
    fi
    case $- in *f*) noglob=1 ;; *) noglob= ;; esac
    set -f
    IFS=:
    for entry in $CUDAENV_SHARED_ROOTS; do
        [ -z "$entry" ] && continue
        case $entry in [!/]*) bad=1 ;; esac
        if [ -n "$chars" ]; then
            case $entry in *[!"$_ce_printable"]*) bad=1 ;; esac
        fi
        [ -n "$bad" ] && break
        while :; do case $entry in ?*/) entry=${entry%/} ;; *) break ;; esac; done
        list=${list:+$list:}$entry
        [ "$entry/versions" -nt "$_ce_r/aliases" ] && _ce_stale=1
    done
    [ -n "$noglob" ] || set +f
    if [ -n "$bad" ]; then
        _cudaenv_describe "$entry"
        _ce_err="CUDAENV_SHARED_ROOTS: $_ce_shown is not an absolute path; allowed are absolute paths of cudaenv stores (printable ASCII), separated by colons"
        return 1
    fi
    _ce_shared_checked=$CUDAENV_SHARED_ROOTS
    _ce_shared=$list
    if [ -f "$_ce_r/aliases/.shared-roots" ]; then
        IFS= read -r marker <"$_ce_r/aliases/.shared-roots" || :
    fi
    [ "x$marker" = "x$list" ] || _ce_stale=1
    return 0
}

# Alias file $1 into _ce_root and _ce_aorigin (its third line); status 1 when
# it is missing or names no toolkit.
_cudaenv_alias_entry() {
    _ce_root=
    _ce_aorigin=
    [ -f "$1" ] || return 1
    { IFS= read -r _ce_root && IFS= read -r _ce_aorigin && IFS= read -r _ce_aorigin; } <"$1" || return 1
    [ -n "$_ce_root" ] && [ -d "$_ce_root/bin" ]
}

# The user's table is stale for a shared store: look _ce_spec up store by
# store, in the order the table is built: the user's own install, then each
# shared store's own table (its managed toolkits only: what its owner found
# elsewhere on their machine is not this one's), then what discovery found
# here. Only after an admin's change, until the user's next rehash.
_cudaenv_resolve_stale() {
    local entry found= noglob IFS
    _cudaenv_alias_entry "$_ce_r/aliases/$_ce_spec" && [ "$_ce_aorigin" = cudaenv ] && return 0
    case $- in *f*) noglob=1 ;; *) noglob= ;; esac
    set -f
    IFS=:
    for entry in $_ce_shared; do
        _cudaenv_alias_entry "$entry/aliases/$_ce_spec" && [ "$_ce_aorigin" = cudaenv ] && { found=1; break; }
    done
    [ -n "$noglob" ] || set +f
    [ -n "$found" ] && return 0
    if _cudaenv_alias_entry "$_ce_r/aliases/$_ce_spec"; then
        case $_ce_aorigin in
            cudaenv | "shared: "*) ;;
            *) return 0 ;;
        esac
    fi
    _ce_root=
    return 1
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

# Export the environment of toolkit $1 (cudaenv/environment.py is the reference).
_cudaenv_apply() {
    local lib
    export CUDA_HOME="$1" CUDA_PATH="$1" CUDAToolkit_ROOT="$1" CUDACXX="$1/bin/nvcc"
    case ":${PATH-}:" in
        # Nothing to drop (the common case in a shim): no loop needed.
        *::* | *":${CUDAENV_PATH_ENTRY-}:"*) _cudaenv_list_without "${PATH-}" "${CUDAENV_PATH_ENTRY-}" ;;
        *) _ce_list=$PATH ;;
    esac
    export PATH="$1/bin${_ce_list:+:$_ce_list}"
    export CUDAENV_PATH_ENTRY="$1/bin"
    if [ "${CUDAENV_LD_LIBRARY_PATH-}" = 1 ]; then
        lib=$1/lib
        [ -d "$1/lib64" ] && lib=$1/lib64
        _cudaenv_list_without "${LD_LIBRARY_PATH-}" "${CUDAENV_LD_ENTRY-}"
        export LD_LIBRARY_PATH="$lib${_ce_list:+:$_ce_list}"
        export CUDAENV_LD_ENTRY="$lib"
    fi
}
