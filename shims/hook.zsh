# zsh wiring for the cudaenv hook. select.sh and hook.sh were defined under
# `emulate sh` (sticky: their functions always run as sh). zsh, unlike dash and
# bash, keeps NUL bytes in variables, so the NUL check looks for one directly.
_ce_nul=$'\0'
# zsh's `read` takes a line a byte at a time to its newline, however long; with
# zsh/system a line costs one read(2) of at most the bytes still allowed, and a
# seek back to just after its newline, so a huge line costs no more than that.
if zmodload zsh/system 2>/dev/null; then
    _ce_bounded=1
    _cudaenv_line9() {
        emulate -L zsh
        setopt no_multibyte
        local chunk
        _ce_l=
        sysread -i 9 -s $1 chunk || [[ -n $chunk ]] || return 1
        _ce_l=${chunk%%$'\n'*}
        if [[ $_ce_l != "$chunk" ]]; then
            sysseek -u 9 -w current $(( ${#_ce_l} + 1 - ${#chunk} ))
            return 0
        fi
        # No newline: the end of the file (status 1, as read), or a line cut at $1 bytes.
        (( ${#chunk} < $1 )) && return 1
        return 0
    }
    # The key's bytes: one read(2) of the file up to one byte past the bound.
    _cudaenv_raw9() {
        sysread -i 9 -s $((@MAX_BYTES@ + 1)) _ce_raw
        return 0
    }
fi
autoload -Uz add-zsh-hook
add-zsh-hook precmd _cudaenv_prompt
add-zsh-hook chpwd _cudaenv_prompt
_cudaenv_hook || :
