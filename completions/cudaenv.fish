# fish completion for cudaenv (install as ~/.config/fish/completions/cudaenv.fish).
# Versions come from the alias table, listed with a glob: no Python per <Tab>.
function __cudaenv_versions
    set -l root $CUDAENV_ROOT
    if test -z "$root"
        set -l data $XDG_DATA_HOME
        test -n "$data"; or set data $HOME/.local/share
        set root $data/cudaenv
    end
    for f in $root/aliases/*
        test -f $f; and string replace -r '.*/' '' -- $f
    end
end

set -l __cudaenv_cmds version root versions local global shell prefix which exec env install uninstall cache resolve doctor rehash init
complete -c cudaenv -f
complete -c cudaenv -n "not __fish_seen_subcommand_from $__cudaenv_cmds" -a "$__cudaenv_cmds"
complete -c cudaenv -n "__fish_seen_subcommand_from local global prefix uninstall install resolve shell" -a "(__cudaenv_versions)"
complete -c cudaenv -n "__fish_seen_subcommand_from shell" -l unset -d "clear the shell's version"
complete -c cudaenv -n "__fish_seen_subcommand_from init" -a "bash zsh fish -"
complete -c cudaenv -n "__fish_seen_subcommand_from which" -a "nvcc ptxas nvlink fatbinary cuobjdump nvdisasm"
