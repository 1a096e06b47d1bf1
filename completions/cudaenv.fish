# fish completion for cudaenv. `cudaenv init - fish` loads it; or install it as
# ~/.config/fish/completions/cudaenv.fish. Versions and program names come from
# globs over the store: no Python per <Tab>.
#
# A name is data, never code: the functions write each name followed by a NUL
# and the completions split on NUL (string split0), so a name holding a newline
# stays one candidate; fish expands nothing in a command substitution's output
# and escapes the word it inserts, so it reads back as exactly that name.
# (fish's command substitution drops a name's trailing newlines.)
# A root that is not absolute is refused, as the shims and the hook refuse it: no
# names are offered (and nothing is printed into the command line).
function __cudaenv_comp_root
    set -l root $CUDAENV_ROOT
    if test -z "$root"
        set -l data $XDG_DATA_HOME
        test -n "$data"; or set data $HOME/.local/share
        set root $data/cudaenv
    end
    string match -q -- '/*' "$root"; or return 1
    printf '%s' "$root"
end

# The file name of path $argv[1], followed by a NUL. A tab would end the candidate
# there (fish reads what follows as its description), so such a name is not offered.
function __cudaenv_comp_name
    set -l name (string replace -r '(?s).*/' '' -- $argv[1] | string collect)
    string match -q -- '*'\t'*' $name; or printf '%s\0' $name
end

function __cudaenv_comp_versions
    set -l root (__cudaenv_comp_root | string collect); or return 0
    for f in $root/aliases/*
        test -f $f; and __cudaenv_comp_name $f
    end
end

function __cudaenv_comp_programs
    set -l root (__cudaenv_comp_root | string collect); or return 0
    for f in $root/shims/*
        test -x $f; and __cudaenv_comp_name $f
    end
end

function __cudaenv_comp_selected
    set -l prefix (command cudaenv prefix 2>/dev/null); or return 0
    for f in $prefix/bin/*
        test -f $f -a -x $f; and __cudaenv_comp_name $f
    end
end

function __cudaenv_comp_options
    set -l cmd (commandline -opc)[2]
    command cudaenv completions $cmd 2>/dev/null | string match -- '--*'
end

set -l __cudaenv_cmds version root versions local global shell prefix which exec env install uninstall cache resolve doctor mirror modulefiles export venv config rehash init version-name version-origin version-file whence latest help commands completions
complete -c cudaenv -f
complete -c cudaenv -n "not __fish_seen_subcommand_from $__cudaenv_cmds" -a "$__cudaenv_cmds"
complete -c cudaenv -n "__fish_seen_subcommand_from local global prefix uninstall install resolve shell latest" -a "(__cudaenv_comp_versions | string split0)"
complete -c cudaenv -n "__fish_seen_subcommand_from shell" -a "-" -d "the shell's previous version"
complete -c cudaenv -n "__fish_seen_subcommand_from $__cudaenv_cmds; and string match -q -- '-*' (commandline -ct)" -a "(__cudaenv_comp_options)"
complete -c cudaenv -n "__fish_seen_subcommand_from env; and __fish_prev_arg_in --format" -a "sh systemd dotenv json"
complete -c cudaenv -n "__fish_seen_subcommand_from init" -a "bash zsh fish sh -"
complete -c cudaenv -n "__fish_seen_subcommand_from which whence" -a "(__cudaenv_comp_programs | string split0)"
complete -c cudaenv -n "__fish_seen_subcommand_from exec" -a "(__cudaenv_comp_selected | string split0)"
complete -c cudaenv -n "__fish_seen_subcommand_from help completions" -a "$__cudaenv_cmds"
