# cudaenv init for fish: shims on PATH, the `cudaenv` function, and a hook on
# PWD changes and prompts that exports the selected toolkit's variables.
# The selection rules are cudaenv/selection.py's (and shims/select.sh's), in
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
end

function __cudaenv_root
    set -l r $CUDAENV_ROOT
    test -n "$r"; or set r $__cudaenv_default_root
    string replace -r '(?<=.)/+$' '' -- $r
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
    test (string length -- "$v") -le 14; or return 1
    # [0-9] is ASCII-only here: PCRE2 without UCP.
    string match -qr '^(0|[1-9][0-9]{0,3})(\.(0|[1-9][0-9]{0,3})){0,2}$' -- "$v"
end

# A bounded, printable rendering of an escaped value (like versions.describe).
function __cudaenv_describe -a escaped
    if string match -qr '%([01][0-9A-F]|7F|[89A-F][0-9A-F])' -- "$escaped"
        echo "(a value with control or non-ASCII bytes)"
        return
    end
    set -l text (string unescape --style=url -- "$escaped")
    if test (string length -- "$text") -gt 40
        set text (string sub -l 40 -- "$text")...
    end
    echo "'$text'"
end

function __cudaenv_invalid
    set -g __cudaenv_err "$argv[1]; allowed are $__cudaenv_allowed"
    return 1
end

# Sets __cudaenv_spec from version file $file, or __cudaenv_err and returns 1.
# A .tool-versions counts only through its `cuda <version>` line; without one
# the status is 2 (the walk up goes on).
function __cudaenv_read_version -a file
    set -l tool (string match -q '*/.tool-versions' -- "$file"; and echo 1)
    if not test -r "$file"
        set -g __cudaenv_err "$file: cannot read version file: Permission denied"
        return 1
    end
    set -l lineno 0
    for e in (string escape --style=url < $file)
        set lineno (math $lineno + 1)
        set e (string replace -r '%0D$' '' -- "$e")
        # Bytes: each %XX stands for one.
        set -l plain (string replace -a '%' '' -- "$e")
        set -l nbytes (math (string length -- "$e") - 2 '*' '(' (string length -- "$e") - (string length -- "$plain") ')')
        if test $nbytes -gt @MAX_LINE@
            __cudaenv_invalid "$file:$lineno: line is longer than @MAX_LINE@ bytes"
            return 1
        end
        if string match -q '*%00*' -- "$e"
            __cudaenv_invalid "$file:$lineno: NUL byte in version file"
            return 1
        end
        set -l v (string replace -r '%23.*$' '' -- "$e")
        set v (string replace -r '^(%20|%09)+' '' -- "$v")
        set v (string replace -r '(%20|%09)+$' '' -- "$v")
        if test -n "$tool"
            if test "$v" = cuda
                __cudaenv_invalid "$file:$lineno: the cuda line names no version"
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
            __cudaenv_invalid "$file:$lineno: invalid version "(__cudaenv_describe "$v")
            return 1
        end
        set -g __cudaenv_spec $v
        return 0
    end
    if test -n "$tool"
        __cudaenv_invalid "$file: no cuda line"
        return 2
    end
    __cudaenv_invalid "$file: no version found (the file is empty or only comments)"
end

# The nearest version file from $PWD up to /, printed; status 1 if none: in
# each directory .cuda-version, else a .tool-versions with a cuda line.
function __cudaenv_find_file
    set -l d (string replace -r '/$' '' -- $PWD)
    while true
        if test -f "$d/.cuda-version"
            echo "$d/.cuda-version"
            return 0
        end
        if test -f "$d/.tool-versions"
            __cudaenv_read_version "$d/.tool-versions"
            if test $status -ne 2
                echo "$d/.tool-versions"
                return 0
            end
        end
        test -n "$d"; or return 1
        set d (string replace -r '/[^/]*$' '' -- "$d")
    end
end

# Sets __cudaenv_spec and __cudaenv_source by precedence; __cudaenv_err on failure.
function __cudaenv_select
    set -l value (string trim -c ' '\t -- "$CUDAENV_VERSION")
    if test -n "$value"
        set -g __cudaenv_source CUDAENV_VERSION
        if not __cudaenv_valid_spec "$value"
            set -l shown "(a value with control or non-ASCII bytes)"
            if string match -qr '^[ -~]*$' -- "$value"
                set shown (__cudaenv_describe (string escape --style=url -- "$value"))
            end
            __cudaenv_invalid "CUDAENV_VERSION: invalid version $shown"
            return 1
        end
        set -g __cudaenv_spec $value
        return 0
    end
    set -l file (__cudaenv_find_file)
    if test -z "$file"
        if not set file (__cudaenv_global_file)
            set -l shown "(a value with control or non-ASCII bytes)"
            if string match -qr '^[ -~]*$' -- "$file"
                set shown (__cudaenv_describe (string escape --style=url -- "$file"))
            end
            set -g __cudaenv_err "CUDAENV_VERSION_FILE must be an absolute path, not $shown"
            return 1
        end
        if not test -f "$file"
            set -g __cudaenv_source default
            set -g __cudaenv_spec system
            return 0
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
            if test -z "$entry"; or test "$entry" = "$r"; or test "$entry" = "$added"
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
    set -l alias "$r/aliases/$__cudaenv_spec"
    if test -f "$alias"
        read -l root < "$alias"
        if test -n "$root"; and test -d "$root/bin"
            set -g __cudaenv_toolkit $root
            return 0
        end
    end
    set -l origin "set by $__cudaenv_source"
    test "$__cudaenv_source" = default; and set origin "default: no .cuda-version or global version file"
    if test "$__cudaenv_spec" = system
        set -g __cudaenv_err "no system CUDA toolkit found ($origin); install one with 'cudaenv install <version>' and select it with 'cudaenv local <version>'"
    else
        set -g __cudaenv_err "version '$__cudaenv_spec' ($origin) is not installed; run: cudaenv install $__cudaenv_spec"
    end
    return 127
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
    if test "$CUDAENV_LD_LIBRARY_PATH" = 1
        set -l lib $root/lib
        test -d $root/lib64; and set lib $root/lib64
        set -gx LD_LIBRARY_PATH $lib (__cudaenv_list_without "$CUDAENV_LD_ENTRY" $LD_LIBRARY_PATH)
        set -gx CUDAENV_LD_ENTRY $lib
    end
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
    set -l rest (__cudaenv_list_without "$CUDAENV_PATH_ENTRY" $PATH)
    if test -n "$__cudaenv_orig_path_entry"
        set -gx PATH $__cudaenv_orig_path_entry $rest
        set -gx CUDAENV_PATH_ENTRY $__cudaenv_orig_path_entry
    else
        set -gx PATH $rest
        set -e CUDAENV_PATH_ENTRY
    end
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
    set -l r (__cudaenv_root)
    set -l key "$r|$CONDA_PREFIX|$CUDAENV_LD_LIBRARY_PATH|"
    set -l file
    set -l value (string trim -c ' '\t -- "$CUDAENV_VERSION")
    if test -n "$value"
        set key "$key"env"|$CUDAENV_VERSION"
    else if set file (__cudaenv_find_file)
        set key "$key"file"|$file|"(string escape --style=url < $file 2>/dev/null | string join '|')
    else if not set file (__cudaenv_global_file); or test -f "$file"
        set key "$key"global"|$file|"(string escape --style=url < $file 2>/dev/null | string join '|')
    else
        set key none
    end
    if test "$key" = "$__cudaenv_key"
        return $__cudaenv_status
    end
    set -g __cudaenv_key $key
    set -g __cudaenv_status 0
    if test "$key" = none
        __cudaenv_restore
        return 0
    end
    if not __cudaenv_select
        set -g __cudaenv_status 1
    else if not __cudaenv_resolve
        set -g __cudaenv_status 127
    end
    if test $__cudaenv_status != 0
        echo "cudaenv: $__cudaenv_err" >&2
        __cudaenv_restore
        return $__cudaenv_status
    end
    __cudaenv_apply $__cudaenv_toolkit
    set -g __cudaenv_applied 1
end

function cudaenv --description 'cudaenv: select CUDA toolkits per directory'
    if test "$argv[1]" = shell
        set -l out (command cudaenv sh-shell --shell fish $argv[2..-1])
        or return $status
        string join \n -- $out | source
        set -g __cudaenv_key
        __cudaenv_hook
        return
    end
    command cudaenv $argv
    set -l s $status
    set -g __cudaenv_key
    __cudaenv_hook
    return $s
end

__cudaenv_hook
