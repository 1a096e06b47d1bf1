# cudaenv init for fish: shims on PATH, the `cudaenv` function, and a hook on
# PWD changes and prompts that exports the selected toolkit's variables.
# The selection rules are cudaenv/selecting/selection.py's (and shims/select.sh's), in
# fish builtins only: the hook starts no process.
#
# Reading version files: fish's `read` cuts a line at a NUL byte, so lines are
# read with `string escape --style=url`, which keeps every byte visible (%00
# is a NUL, %XX any other non-alphanumeric byte). The grammar only admits
# digits, dots and `system`, which that style leaves as they are, so the value
# is checked in its escaped form and is never unescaped except for display.

set -l __cudaenv_shims @SHIMS@
if not contains -- $__cudaenv_shims $PATH
    set -gx PATH $__cudaenv_shims $PATH
end
set -g __cudaenv_allowed @ALLOWED@
set -g __cudaenv_default_root @DEFAULT_ROOT@
set -g __cudaenv_vars CUDA_HOME CUDA_PATH CUDAToolkit_ROOT CUDACXX

if not set -q __cudaenv_saved
    set -g __cudaenv_saved 1
    for v in $__cudaenv_vars
        set -q $v; and set -g __cudaenv_had_$v 1
        set -g __cudaenv_orig_$v $$v
    end
    set -g __cudaenv_orig_path_entry $CUDAENV_PATH_ENTRY
    set -g __cudaenv_orig_ld_entry $CUDAENV_LD_ENTRY
    set -g __cudaenv_applied
    set -g __cudaenv_key
    set -g __cudaenv_status 0
    set -g __cudaenv_missing
end

# The store without trailing slashes; status 1 (with __cudaenv_err) for a value
# that is not absolute: `~/store` too, which nothing expands (as store.root()).
function __cudaenv_root
    set -l r $CUDAENV_ROOT
    test -n "$r"; or set r $__cudaenv_default_root
    string replace -r '(?<=.)/+$' '' -- $r
    if string match -qr '[\x00-\x1f\x7f-\x9f]' -- "$r"
        # As store.root(): a newline in it would split every path made from it.
        set -l shown @UNPRINTABLE@
        set -g __cudaenv_err @ROOT_HAS_CONTROL{shown=$shown}@
        return 1
    end
    string match -q -- '/*' "$r"; and return 0
    set -l shown (__cudaenv_shown "$r")
    set -g __cudaenv_err @ROOT_NOT_ABSOLUTE{shown=$shown}@
    return 1
end

# The global version file: $CUDAENV_VERSION_FILE (absolute) or $CUDAENV_ROOT/version.
function __cudaenv_global_file
    set -l f $CUDAENV_VERSION_FILE
    test -n "$f"; or set f (__cudaenv_root)/version
    echo $f
    string match -q '/*' -- $f
end

function __cudaenv_valid_spec -a v
    test "$v" = system; and return 0
    test (string length -- "$v") -le @MAX_SPEC_LEN@; or return 1
    # [0-9] is ASCII-only here: PCRE2 without UCP.
    string match -qr '^(0|[1-9][0-9]{0,3})(\.(0|[1-9][0-9]{0,3})){0,2}$' -- "$v"
end

# A bounded, printable rendering of an escaped value (like versions.describe).
function __cudaenv_describe -a escaped
    if string match -qr '%([01][0-9A-F]|7F|[89A-F][0-9A-F])' -- "$escaped"
        echo @UNPRINTABLE@
        return
    end
    set -l text (string unescape --style=url -- "$escaped")
    if test (string length -- "$text") -gt 40
        set text (string sub -l 40 -- "$text")...
    end
    echo "'$text'"
end

# A value as a one-line error shows it: quoted and cut at 40 characters when it is
# printable ASCII, otherwise only the word for what it is.
function __cudaenv_shown -a value
    if string match -qr '^[ -~]*$' -- "$value"
        __cudaenv_describe (string escape --style=url -- "$value")
    else
        echo @UNPRINTABLE@
    end
end

# Every message the hook prints goes through here: each byte that is not
# printable ASCII (a terminal escape or a newline in a directory name) is
# printed as '?', so no path or value can drive the terminal. One line per argument.
function __cudaenv_say
    printf '%s\n' (string replace -ra -- '[^ -~]' '?' $argv) >&2
end

function __cudaenv_invalid
    set -g __cudaenv_err "$argv[1]; allowed are $__cudaenv_allowed"
    return 1
end

# What $file is, when it is not a regular file (a FIFO is never opened).
function __cudaenv_not_regular -a file
    set -l what @KIND_OTHER@
    if test -L "$file"; and not test -e "$file"
        set what @KIND_DANGLING@
    else if test -d "$file"
        set what @KIND_DIRECTORY@
    else if test -p "$file"
        set what @KIND_FIFO@
    else if test -c "$file"; or test -b "$file"
        set what @KIND_DEVICE@
    else if test -S "$file"
        set what @KIND_SOCKET@
    end
    set -g __cudaenv_err @NOT_REGULAR{path=$file,what=$what}@
    return 1
end

# The number of bytes an escaped text stands for: each %XX is one.
function __cudaenv_nbytes -a escaped
    set -l plain (string replace -a '%' '' -- "$escaped")
    math (string length -- "$escaped") - 2 '*' '(' (string length -- "$escaped") - (string length -- "$plain") ')'
end

# A program from the standard directories, never from the caller's PATH.
function __cudaenv_std_tool -a name
    for d in /usr/bin /bin
        test -x $d/$name; and echo $d/$name; and return 0
    end
    return 1
end

# Is version file $file within the bound? fish's `read -n` passes over bytes
# that are not UTF-8 without counting them, so a file of such bytes would be
# read to its end at every prompt (0.6 s per MB). As in the shims
# (select.sh's _cudaenv_size_known), the size comes first: from a stamp of our
# own at the file's own path under $CUDAENV_ROOT/@SIZE_STAMPS@, dated exactly
# as the file (a file changed or dated back since has another time), for our
# own files only, else from one `stat -c %s` (not even an open), which leaves
# that stamp. Status 1 past the bound. A size that cannot be measured is
# status 0: the reads still count what they see.
function __cudaenv_size_ok -a file
    set -l dir (__cudaenv_root)/@SIZE_STAMPS@
    set -l stamp $dir$file
    string match -q -r -- '/\.\.?(/|$)|//' $file; and set stamp
    test -O "$file"; or set stamp
    if test -n "$stamp"; and test -O "$stamp"; and not test "$file" -nt "$stamp"; and not test "$file" -ot "$stamp"
        return 0
    end
    set -l stat (__cudaenv_std_tool stat); or return 0
    # (Not `; or`: string trim's status says whether it trimmed.)
    set -l size (string trim -- ($stat -L -c %s -- $file 2>/dev/null))
    string match -q -r -- '^[0-9]{1,15}$' "$size"; or return 0
    test $size -gt @MAX_BYTES@; and return 1
    test -n "$stamp"; or return 0
    # Nothing is made or written in a stamps directory that is not ours.
    test -L $dir; and return 0
    test -e $dir; and not test -O $dir; and return 0
    set -l parent (string replace -r -- '/[^/]*$' '' $stamp | string collect)
    if not test -d $parent
        set -l mkdir (__cudaenv_std_tool mkdir); or return 0
        # The top directory private first: -p makes the ones below it with the umask.
        test -d $dir; or $mkdir -m 700 -- $dir 2>/dev/null; or return 0
        $mkdir -p -- $parent 2>/dev/null; or return 0
    end
    test -O $dir; and test -O $parent; or return 0
    set -l touch (__cudaenv_std_tool touch); or return 0
    $touch -r $file -- $stamp 2>/dev/null
    return 0
end

# The whole of version file $file, URL-escaped, into __cudaenv_bytes; status 1
# with __cudaenv_err when it is not a regular file or plainly past the bound of
# at most @MAX_BYTES@ bytes in at most @MAX_LINES@ lines (cudaenv/selecting/versionfile.py's;
# __cudaenv_slurp_checked checks it exactly).
# `read -z -n` stops after a number of characters, so it bounds the cost of
# any file; but it drops bytes that are not UTF-8 and stops at NULs, so only a
# file within that bound is then read exactly, by `string split0`.
function __cudaenv_slurp -a file
    set -g __cudaenv_bytes
    test -f "$file"; or __cudaenv_not_regular "$file"; or return 1
    if not test -r "$file"
        set -l reason "Permission denied"
        set -g __cudaenv_err @UNREADABLE{path=$file,reason=$reason}@
        return 1
    end
    if not __cudaenv_size_ok $file
        set -g __cudaenv_err @TOO_LARGE{path=$file}@
        return 1
    end
    set -l seen 0
    set -l piece
    begin
        # Each piece ends at a NUL (counted as one byte) or at the end of the file.
        while test $seen -le (math @MAX_BYTES@ + 1); and read -z -n (math @MAX_BYTES@ + 2 - $seen) piece
            set seen (math $seen + (string length -- "$piece") + 1)
        end
    end <$file
    if test $seen -gt (math @MAX_BYTES@ + 1)
        set -g __cudaenv_err @TOO_LARGE{path=$file}@
        return 1
    end
    set -g __cudaenv_bytes (string join %00 -- (string escape --style=url -- (string split0 <$file)))
    return 0  # not string join's status (1 for a single piece)
end

# __cudaenv_slurp, and then the exact size check of what it read.
function __cudaenv_slurp_checked -a file
    __cudaenv_slurp "$file"; or return 1
    set -l all $__cudaenv_bytes
    set -l no_nl (string replace -a '%0A' '' -- "$all")
    set -l nlines (math '(' (string length -- "$all") - (string length -- "$no_nl") ')' / 3)
    # A last line without a newline is a line too.
    test -n "$all"; and not string match -q -- '*%0A' "$all"; and set nlines (math $nlines + 1)
    if test (__cudaenv_nbytes "$all") -gt @MAX_BYTES@; or test $nlines -gt @MAX_LINES@
        set -g __cudaenv_err @TOO_LARGE{path=$file}@
        return 1
    end
    return 0
end

# Sets __cudaenv_spec from version file $file, or __cudaenv_err and returns 1.
# A .tool-versions counts only through its `cuda <version>` line; without one
# the status is 2 (the walk up goes on). Lines up to the value are checked;
# the rest of the file only counts towards the size.
function __cudaenv_read_version -a file
    set -l tool (string match -q '*/.tool-versions' -- "$file"; and echo 1)
    __cudaenv_slurp_checked "$file"; or return 1
    set -l lineno 0
    set -l lines (string split %0A -- "$__cudaenv_bytes")
    # What follows a final newline is not a line.
    test -z "$lines[-1]"; and set -e lines[-1]
    for e in $lines
        set lineno (math $lineno + 1)
        set e (string replace -r '%0D$' '' -- "$e")
        # A UTF-8 byte order mark (Windows editors write one) starts no value.
        test $lineno = 1; and set e (string replace -r '^%EF%BB%BF' '' -- "$e")
        if test (__cudaenv_nbytes "$e") -gt @MAX_LINE@
            __cudaenv_invalid "$file:$lineno: "@LINE_TOO_LONG@
            return 1
        end
        if string match -q '*%00*' -- "$e"
            __cudaenv_invalid "$file:$lineno: "@NUL_BYTE@
            return 1
        end
        set -l v (string replace -r '%23.*$' '' -- "$e")
        set v (string replace -r '^(%20|%09)+' '' -- "$v")
        set v (string replace -r '(%20|%09)+$' '' -- "$v")
        if test -n "$tool"
            if test "$v" = cuda
                __cudaenv_invalid "$file:$lineno: "@NO_CUDA_VERSION@
                return 1
            else if string match -qr '^cuda(%20|%09)' -- "$v"
                set v (string replace -r '^cuda(%20|%09)+' '' -- "$v")
                set v (string replace -r '(%20|%09).*$' '' -- "$v")
            else
                continue
            end
        end
        test -n "$v"; or continue
        if not __cudaenv_valid_spec "$v"
            set -l shown (__cudaenv_describe "$v")
            __cudaenv_invalid "$file:$lineno: "@INVALID_VERSION{shown=$shown}@
            return 1
        end
        set -g __cudaenv_spec $v
        return 0
    end
    if test -n "$tool"
        __cudaenv_invalid "$file: "@NO_CUDA_LINE@
        return 2
    end
    __cudaenv_invalid "$file: "@NO_VERSION@
end

# Is version file $file in directory $dir another user's (not root's) in a
# world-writable sticky directory such as /tmp, where anyone can put one? Then
# it is ignored, and the warning goes to __cudaenv_warn (said once by the hook).
# Costs one stat (test -k) unless the directory is sticky and the file is not
# plainly ours; only then is `stat` run, as fish cannot tell a file's owner.
function __cudaenv_foreign -a dir file
    test -n "$dir"; or set dir /
    test -k "$dir"; or return 1
    test -O "$file"; and not test -L "$file"; and return 1
    # The owner of /proc/self is our effective user.
    set -l stat (__cudaenv_std_tool stat); or return 1
    set -l out ($stat -c '%a %u' -- "$dir" "$file" /proc/self 2>/dev/null | string split ' ')
    or return 1
    test (count $out) = 6; or return 1
    string match -qr '[2367]$' -- $out[1]; or return 1  # the "others" digit has the write bit
    test "$out[4]" = 0; or test "$out[4]" = "$out[6]"; and return 1
    set -l uid $out[4]
    set -ga __cudaenv_warn @FOREIGN{path=$file,uid=$uid,directory=$dir}@
    return 0
end

# Does $argv[1] exist in any form (a dangling symlink too)?
function __cudaenv_exists
    test -e "$argv[1]"; or test -L "$argv[1]"
end

# The nearest version file from $PWD up to /, into __cudaenv_file; status 1 if
# none: in each directory .cuda-version, else a .tool-versions with a cuda
# line. Any kind of file counts (a directory or a FIFO is an error, not
# skipped), except another user's in a world-writable sticky directory.
function __cudaenv_find_file
    set -g __cudaenv_file
    set -g __cudaenv_warn
    # The directories from here up to the root ("": its files are "/.cuda-version"), deepest first.
    # This runs at every prompt: every ancestor from one split, not one substitution each
    # (`string split` hands a substitution whole elements: a name holding a newline stays one).
    set -l dirs ""
    set -l d ""
    for part in (string split --no-empty / -- $PWD)
        set d "$d/$part"
        set -p dirs $d
    end
    for d in $dirs
        # One `test` per directory for the common case, neither file there;
        # -L as well as -e: a dangling symlink counts.
        if test -e "$d/.cuda-version" -o -L "$d/.cuda-version" -o -e "$d/.tool-versions" -o -L "$d/.tool-versions"
            if __cudaenv_exists "$d/.cuda-version"; and not __cudaenv_foreign "$d" "$d/.cuda-version"
                set -g __cudaenv_file "$d/.cuda-version"
                return 0
            end
            if __cudaenv_exists "$d/.tool-versions"; and not __cudaenv_foreign "$d" "$d/.tool-versions"
                __cudaenv_read_version "$d/.tool-versions"
                if test $status -ne 2
                    set -g __cudaenv_file "$d/.tool-versions"
                    return 0
                end
            end
        end
    end
    return 1
end

# Sets __cudaenv_spec and __cudaenv_source by precedence; __cudaenv_err on failure.
function __cudaenv_select
    set -l value (string trim -c ' '\t -- "$CUDAENV_VERSION")
    if test -n "$value"
        set -g __cudaenv_source CUDAENV_VERSION
        if not __cudaenv_valid_spec "$value"
            set -l shown (__cudaenv_shown "$value")
            __cudaenv_invalid @ENV_INVALID{shown=$shown}@
            return 1
        end
        set -g __cudaenv_spec $value
        return 0
    end
    __cudaenv_find_file
    set -l file $__cudaenv_file
    if test -z "$file"
        if not set file (__cudaenv_global_file)
            set -l shown (__cudaenv_shown "$file")
            set -g __cudaenv_err @VERSION_FILE_NOT_ABSOLUTE{shown=$shown}@
            return 1
        end
        if not __cudaenv_exists "$file"
            # None of the user's own: a shared store's global version is the default.
            __cudaenv_shared_default (__cudaenv_root); or return 1
            set file $__cudaenv_shared_default
            if test -z "$file"
                set -g __cudaenv_source default
                set -g __cudaenv_spec system
                return 0
            end
        end
    end
    set -g __cudaenv_source $file
    __cudaenv_read_version $file
end

# Sets __cudaenv_toolkit for __cudaenv_spec, or __cudaenv_err and returns 127.
function __cudaenv_resolve
    set -l r (__cudaenv_root)
    set -g __cudaenv_toolkit
    if test "$__cudaenv_spec" = system
        if test -n "$CONDA_PREFIX"; and test -x "$CONDA_PREFIX/bin/nvcc"
            set -g __cudaenv_toolkit $CONDA_PREFIX
            return 0
        end
        set -l added $CUDAENV_PATH_ENTRY
        test -n "$added"; or set added $r
        for entry in $PATH
            set entry (string replace -r '(?<=.)/+$' '' -- "$entry")
            # A relative entry is never a toolkit root (see select.sh).
            if test -z "$entry"; or not string match -q '/*' -- "$entry"; or test "$entry" = "$r"; or test "$entry" = "$added"
                continue
            end
            if test (string sub -l (math (string length -- "$r") + 1) -- "$entry") = "$r/"
                continue
            end
            # A toolkit's bin/, not a wrapper such as /usr/local/bin/nvcc (as discover.py checks).
            if test -f "$entry/nvcc"; and test -x "$entry/nvcc"; and test -f "$entry/../include/cuda_runtime.h"
                set -l dir .
                string match -q '*/*' -- "$entry"; and set dir (string replace -r '/[^/]*$' '' -- "$entry")
                test -n "$dir"; or set dir /
                set -g __cudaenv_toolkit $dir
                return 0
            end
        end
    end
    # A toolkit copied into or deleted from versions/ by hand since the last rehash.
    if test "$r/versions" -nt "$r/aliases"; and __cudaenv_scan_versions $r
        return 0
    end
    __cudaenv_shared $r; or return 1
    set -l alias "$r/aliases/$__cudaenv_spec"
    if test -n "$__cudaenv_stale"
        __cudaenv_resolve_stale $r; and return 0
    else if test -f "$alias"
        read -l root < "$alias"
        if test -n "$root"; and test -d "$root/bin"
            set -g __cudaenv_toolkit $root
            return 0
        end
    end
    set -l origin @ORIGIN_FILE{source=$__cudaenv_source}@
    test "$__cudaenv_source" = "$__cudaenv_shared_default"; and set origin @SHARED_ORIGIN{source=$__cudaenv_source}@
    test "$__cudaenv_source" = @ENV_VAR@; and set origin @ORIGIN_ENV@
    test "$__cudaenv_source" = default; and set origin @ORIGIN_DEFAULT@
    if test "$__cudaenv_spec" = system
        set -g __cudaenv_err @NO_SYSTEM{origin=$origin}@
    else
        set -g __cudaenv_err @NOT_INSTALLED{spec=$__cudaenv_spec,origin=$origin}@
    end
    return 127
end

# The newest managed toolkit in $r/versions matching the spec (as _cudaenv_scan_versions in select.sh).
function __cudaenv_scan_versions -a r
    test "$__cudaenv_spec" = system; and return 1
    set -l best
    set -l bkey
    for d in $r/versions/*
        set -l rel (string replace -r '.*/' '' -- $d)
        string match -qr '^(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})$' -- $rel; or continue
        set -l parts (string split . -- $rel)
        contains -- $__cudaenv_spec $rel "$parts[1].$parts[2]" $parts[1]; or continue
        test -d "$d/bin"; or continue
        set -l key (math "$parts[1] * 100000000 + $parts[2] * 10000 + $parts[3]")
        if test -z "$bkey"; or test $key -gt $bkey
            set best $d
            set bkey $key
        end
    end
    test -n "$best"; or return 1
    set -g __cudaenv_toolkit $best
    return 0
end

# CUDAENV_SHARED_ROOTS, as _cudaenv_shared in select.sh: checks each entry
# and whether the alias table of store $r is stale for the shared stores.
# Sets __cudaenv_shared (a list) and __cudaenv_stale, or __cudaenv_err and returns 1.
function __cudaenv_shared -a r
    set -g __cudaenv_shared
    set -g __cudaenv_stale
    set -l marker "$r/aliases/.shared-roots"
    if test -z "$CUDAENV_SHARED_ROOTS"
        test -e "$marker"; and set -g __cudaenv_stale 1
        return 0
    end
    # The setting is checked and normalized once per value, so once per shell;
    # the hook calls this only when it selects, not at every prompt.
    if not set -q __cudaenv_shared_checked; or test "$__cudaenv_shared_checked" != "$CUDAENV_SHARED_ROOTS"
        # Checked whole first: a newline inside would otherwise split an entry in two.
        set -l bad (string match -qr '[^ -~]' -- "$CUDAENV_SHARED_ROOTS"; and echo 1)
        set -l list
        for entry in (string split -- : "$CUDAENV_SHARED_ROOTS")
            test -n "$entry"; or continue
            if test -n "$bad"; or not string match -q -- '/*' "$entry"
                set -l shown @UNPRINTABLE@
                test -z "$bad"; and set shown (__cudaenv_describe (string escape --style=url -- "$entry"))
                set -g __cudaenv_err @SHARED_NOT_ABSOLUTE{shown=$shown}@
                return 1
            end
            set -a list (string replace -r '(?<=.)/+$' '' -- "$entry")
        end
        set -g __cudaenv_shared_list $list
        set -g __cudaenv_shared_joined (string join : -- $list)
        set -g __cudaenv_shared_checked $CUDAENV_SHARED_ROOTS
    end
    set -g __cudaenv_shared $__cudaenv_shared_list
    for entry in $__cudaenv_shared
        test "$entry/versions" -nt "$r/aliases"; and set -g __cudaenv_stale 1
    end
    set -l built ""
    test -f "$marker"; and read built < "$marker"
    test "$built" = $__cudaenv_shared_joined; or set -g __cudaenv_stale 1
    return 0
end

# The admin's default, as _cudaenv_select_shared in select-rare.sh: the
# `version` file of the first shared store that has one into
# __cudaenv_shared_default (empty when none), or __cudaenv_err and status 1.
function __cudaenv_shared_default -a r
    set -g __cudaenv_shared_default
    __cudaenv_shared $r; or return 1
    for entry in $__cudaenv_shared
        test "$entry" != "$r"; and __cudaenv_exists "$entry/version"; or continue
        __cudaenv_untrusted_shared $entry; and continue  # another user's default is not obeyed
        set -g __cudaenv_shared_default "$entry/version"
        return 0
    end
    return 0
end

# No version file of the user's own: the shared stores' global version files
# (the admin's default) for the hook's key, as _cudaenv_shared_key in hook.sh;
# status 1 when no store has one. Which applies is decided when the key changes.
function __cudaenv_shared_key
    set -l key
    for entry in (string split -- : "$CUDAENV_SHARED_ROOTS")
        test -n "$entry"; and __cudaenv_exists "$entry/version"; or continue
        __cudaenv_slurp "$entry/version"; and set -a key "$entry|$__cudaenv_bytes"; or set -a key "$entry|$__cudaenv_err"
    end
    test -n "$key"; or return 1
    string join '|' -- $key
    return 0  # not string join's status (1 for a single piece)
end

# Alias file $argv[1]: its root into __cudaenv_toolkit and origin into
# __cudaenv_aorigin; status 1 when missing or naming no toolkit.
function __cudaenv_alias_entry -a file
    set -g __cudaenv_toolkit
    set -g __cudaenv_aorigin
    test -f "$file"; or return 1
    set -l lines
    while read -l line
        set -a lines $line
        test (count $lines) -ge 3; and break
    end < "$file"
    test (count $lines) -ge 3; or return 1
    set -g __cudaenv_toolkit $lines[1]
    set -g __cudaenv_aorigin $lines[3]
    test -n "$lines[1]"; and test -d "$lines[1]/bin"
end

# The table of store $r is stale for a shared store: store by store, as
# _cudaenv_resolve_stale in select.sh.
function __cudaenv_resolve_stale -a r
    set -l alias "$r/aliases/$__cudaenv_spec"
    __cudaenv_alias_entry $alias; and test "$__cudaenv_aorigin" = cudaenv; and return 0
    for entry in $__cudaenv_shared
        __cudaenv_untrusted_shared $entry; and continue
        __cudaenv_alias_entry "$entry/aliases/$__cudaenv_spec"; and test "$__cudaenv_aorigin" = cudaenv; and return 0
    end
    if __cudaenv_alias_entry $alias
        test "$__cudaenv_aorigin" != cudaenv; and not string match -q -- 'shared: *' "$__cudaenv_aorigin"; and return 0
    end
    set -g __cudaenv_toolkit
    return 1
end

# Is shared store $store one to skip (as _cudaenv_untrusted_shared in select-rare.sh, the rule of
# cudaenv/foundation/ownership.py, worded the same)? Warns on stderr. One `stat`, on the stale path only.
function __cudaenv_untrusted_shared -a store
    set -l d (builtin realpath -- $store 2>/dev/null); or return 1
    test -d "$d"; or return 1
    set -l dirs $d
    while test "$d" != /
        set d (string replace -r '/[^/]*$' '' -- $d)
        test -n "$d"; or set d /
        set -a dirs $d
    end
    # The owner of /proc/self is our effective user.
    set -l stat (__cudaenv_std_tool stat); or return 1
    set -l out ($stat -c '%u %g %U %G %a %n' -- /proc/self $dirs 2>/dev/null); or return 1
    set -l me (string split -m 5 ' ' -- $out[1])
    set -l target 1
    set -l why
    for line in $out[2..-1]
        # uid gid user group mode name
        set -l f (string split -m 5 ' ' -- $line)
        if test "$f[1]" != 0; and test "$f[1]" != "$me[1]"
            set why "$f[6] belongs to uid $f[1]"
            break
        end
        # The group or the "others" digit has the write bit; a sticky directory above passes, and
        # group write by the user's private group (primary, named after them) is nobody else's.
        if string match -qr '[2367].?$' -- $f[5]
            and not begin; string match -qr '[2367][0145]$' -- $f[5]; and test "$f[2]" = "$me[2]" -a "$f[4]" = "$me[3]"; end
            if test -n "$target"; or not string match -qr '^[1357]...$' -- $f[5]
                set why "$f[6] is writable by others (mode "(string pad -c 0 -w 4 -- $f[5])")"
                break
            end
        end
        set target
    end
    test -n "$why"; or return 1
    # Said at once, and once per store in this shell, whose hook selects again and again.
    if not contains -- $store $__cudaenv_untrusted_said
        __cudaenv_say @SHARED_UNTRUSTED{root=$store,why=$why}@
        set -ga __cudaenv_untrusted_said $store
    end
    return 0
end

# $argv[2..] without empty entries and without the first occurrence of $argv[1].
function __cudaenv_list_without
    set -l drop $argv[1]
    set -l list
    for e in $argv[2..-1]
        test -n "$e"; or continue
        if test -n "$drop"; and test "$e" = "$drop"
            set drop
            continue
        end
        set -a list $e
    end
    string join \n -- $list
end

function __cudaenv_apply -a root
    for v in CUDA_HOME CUDA_PATH CUDAToolkit_ROOT
        set -gx $v $root
    end
    set -gx CUDACXX $root/bin/nvcc
    set -gx PATH $root/bin (__cudaenv_list_without "$CUDAENV_PATH_ENTRY" $PATH)
    set -gx CUDAENV_PATH_ENTRY $root/bin
    if test "$CUDAENV_LD_LIBRARY_PATH" != 0
        set -l lib $root/lib
        test -d $root/lib64; and set lib $root/lib64
        set -gx LD_LIBRARY_PATH $lib (__cudaenv_list_without "$CUDAENV_LD_ENTRY" $LD_LIBRARY_PATH)
        set -gx CUDAENV_LD_ENTRY $lib
    else
        # Turned off mid-shell: the entry this hook added while it was on goes.
        __cudaenv_ld_restore
    end
    __cudaenv_host_compiler $root
end

# The host compiler cudaenv applied before (CUDAENV_CCBIN) is nobody's choice: drop it.
function __cudaenv_host_compiler_drop
    test -n "$CUDAENV_CCBIN"; or return 0
    test "$NVCC_CCBIN" = "$CUDAENV_CCBIN"; and set -e NVCC_CCBIN
    test "$CUDAHOSTCXX" = "$CUDAENV_CCBIN"; and set -e CUDAHOSTCXX
    set -e CUDAENV_CCBIN
end

# The host compiler rehash chose for toolkit $root, as _cudaenv_host_compiler in
# select.sh: host-compiler/<spec> exists only when one is needed, and a compiler
# the user named (CC, CXX, CUDAHOSTCXX, NVCC_CCBIN, -ccbin in the NVCC flags) stays.
function __cudaenv_host_compiler -a root
    __cudaenv_host_compiler_drop
    set -l file (__cudaenv_root)/host-compiler/$__cudaenv_spec
    test -f "$file"; or return 0
    set -l lines
    while read -l line
        set -a lines $line
    end <$file
    test (count $lines) -ge 2; and test "$lines[1]" = "$root"; and test -n "$lines[2]"; or return 0
    test -z "$CC$CXX$CUDAHOSTCXX$NVCC_CCBIN"; or return 0
    string match -qr '(^|\s)(-ccbin|--compiler-bindir)' -- "$NVCC_PREPEND_FLAGS $NVCC_APPEND_FLAGS"; and return 0
    set -gx NVCC_CCBIN $lines[2]
    set -gx CUDAHOSTCXX $lines[2]
    set -gx CUDAENV_CCBIN $lines[2]
end

# Undo what this shell's hook exported; PATH loses only the entry it added.
function __cudaenv_restore
    test -n "$__cudaenv_applied"; or return 0
    set -g __cudaenv_applied
    for v in $__cudaenv_vars
        set -l had __cudaenv_had_$v
        set -l orig __cudaenv_orig_$v
        if set -q $had
            set -gx $v $$orig
        else
            set -e $v
        end
    end
    __cudaenv_host_compiler_drop
    set -l rest (__cudaenv_list_without "$CUDAENV_PATH_ENTRY" $PATH)
    if test -n "$__cudaenv_orig_path_entry"
        set -gx PATH $__cudaenv_orig_path_entry $rest
        set -gx CUDAENV_PATH_ENTRY $__cudaenv_orig_path_entry
    else
        set -gx PATH $rest
        set -e CUDAENV_PATH_ENTRY
    end
    __cudaenv_ld_restore
end

# LD_LIBRARY_PATH loses the entry this shell's hook put first, and an entry
# the parent shell's hook exported comes back: on leaving a project, and when
# the user sets CUDAENV_LD_LIBRARY_PATH to 0 mid-shell (__cudaenv_apply).
function __cudaenv_ld_restore
    if test -n "$CUDAENV_LD_ENTRY"; and test "$CUDAENV_LD_ENTRY" != "$__cudaenv_orig_ld_entry"
        set -l ld (__cudaenv_list_without "$CUDAENV_LD_ENTRY" $LD_LIBRARY_PATH)
        if test -n "$__cudaenv_orig_ld_entry"
            set -gx LD_LIBRARY_PATH $__cudaenv_orig_ld_entry $ld
            set -gx CUDAENV_LD_ENTRY $__cudaenv_orig_ld_entry
        else
            if set -q ld[1]
                set -gx LD_LIBRARY_PATH $ld
            else
                set -e LD_LIBRARY_PATH
            end
            set -e CUDAENV_LD_ENTRY
        end
    end
end

# Runs on every directory change and prompt; cheap unless something changed.
function __cudaenv_hook --on-variable PWD --on-event fish_prompt
    # A store that is not absolute: said once per value, nothing applied.
    set -l r (__cudaenv_root)
    or begin
        set -l bad "badroot|$CUDAENV_ROOT"
        test "$bad" = "$__cudaenv_key"; and return 1
        set -g __cudaenv_key $bad
        set -g __cudaenv_status 1
        __cudaenv_say "cudaenv: $__cudaenv_err"
        __cudaenv_restore
        return 1
    end
    # The stores themselves (CUDAENV_SHARED_ROOTS too) are looked at when a
    # selection is made, not at every prompt: see the two checks below.
    set -l key "$r|$CONDA_PREFIX|$CUDAENV_LD_LIBRARY_PATH|$CUDAENV_SHARED_ROOTS|"
    # The user's own host compiler settings, as in hook.sh: one named mid-shell
    # takes the place of cudaenv's at the next prompt (CUDAENV_CCBIN's is ours).
    set key "$key$CC|$CXX|$NVCC_PREPEND_FLAGS|$NVCC_APPEND_FLAGS|"
    test "$CUDAHOSTCXX|$NVCC_CCBIN" = "$CUDAENV_CCBIN|$CUDAENV_CCBIN"; or set key "$key$CUDAHOSTCXX|$NVCC_CCBIN|"
    set -l value (string trim -c ' '\t -- "$CUDAENV_VERSION")
    set -g __cudaenv_warn
    set -l none
    # The key holds the version file's bytes, read within the same bound as
    # the real read (an error text past it), so a huge file costs no more.
    set -l gfile (__cudaenv_global_file)
    set -l gfile_ok $status
    if test -n "$value"
        set key "$key"env"|$CUDAENV_VERSION"
    else if __cudaenv_find_file
        __cudaenv_slurp $__cudaenv_file; or set __cudaenv_bytes $__cudaenv_err
        set key "$key"file"|$__cudaenv_file|$__cudaenv_bytes"
    else if test $gfile_ok -ne 0
        # An invalid CUDAENV_VERSION_FILE: the selection reports it.
        set key "$key"global"|invalid|$CUDAENV_VERSION_FILE"
    else if __cudaenv_exists "$gfile"
        __cudaenv_slurp $gfile; or set __cudaenv_bytes $__cudaenv_err
        set key "$key"global"|$gfile|$__cudaenv_bytes"
    else if test -n "$CUDAENV_SHARED_ROOTS"; and set -l shared (__cudaenv_shared_key)
        set key "$key"shared"|$shared"
    else
        set key "$key"none
        set none 1
    end
    set -l warn $__cudaenv_warn
    set key "$key|$warn"
    # Installs and uninstalls made elsewhere, as in hook.sh: the applied
    # toolkit deleted (select again), or the missing release installed since
    # (looked for quietly, only while it is missing).
    if test -n "$__cudaenv_applied"; and not test -d "$CUDAENV_PATH_ENTRY"
        set -g __cudaenv_key
    end
    if test -n "$__cudaenv_missing"
        set -g __cudaenv_spec $__cudaenv_missing
        __cudaenv_resolve 2>/dev/null; and set -g __cudaenv_key
    end
    if test "$key" = "$__cudaenv_key"
        return $__cudaenv_status
    end
    set -g __cudaenv_key $key
    set -g __cudaenv_missing
    set -g __cudaenv_status 0
    test -n "$warn"; and __cudaenv_say $warn
    if test -n "$none"
        __cudaenv_default
        return 0
    end
    if not __cudaenv_select
        set -g __cudaenv_status 1
    else
        __cudaenv_resolve; or set -g __cudaenv_status $status
        test $__cudaenv_status = 127; and set -g __cudaenv_missing $__cudaenv_spec
    end
    if test $__cudaenv_status != 0
        __cudaenv_say "cudaenv: $__cudaenv_err"
        __cudaenv_restore
        return $__cudaenv_status
    end
    __cudaenv_apply $__cudaenv_toolkit
    set -g __cudaenv_applied 1
end

# Nothing selects a toolkit here (no CUDAENV_VERSION, no version file, no
# global version), so `system` applies. Variables the user had set before the
# hook are their own choice of toolkit: those come back. Otherwise the system
# toolkit's root is exported, as for an explicit `system`; with none found,
# nothing is exported and nothing is said (no error at every prompt).
function __cudaenv_default
    set -l had
    for v in $__cudaenv_vars
        set -q __cudaenv_had_$v; and set had 1
    end
    if test -z "$had"
        set -g __cudaenv_spec system
        set -g __cudaenv_source default
        if __cudaenv_resolve
            __cudaenv_apply $__cudaenv_toolkit
            set -g __cudaenv_applied 1
            return 0
        end
    end
    __cudaenv_restore
end

function cudaenv --description 'cudaenv: select CUDA toolkits per directory'
    if test "$argv[1]" = shell
        set -l out (command @CUDAENV@ sh-shell --shell fish $argv[2..-1])
        or return $status
        string join \n -- $out | source
        set -g __cudaenv_key
        __cudaenv_hook
        return
    end
    command @CUDAENV@ $argv
    set -l s $status
    set -g __cudaenv_key
    __cudaenv_hook
    return $s
end

__cudaenv_hook
