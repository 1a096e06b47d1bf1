# zsh wiring for the cudaenv hook. select.sh and hook.sh were defined under
# `emulate sh` (sticky: their functions always run as sh). zsh, unlike dash and
# bash, keeps NUL bytes in variables, so the NUL check looks for one directly.
_ce_nul=$'\0'
autoload -Uz add-zsh-hook
add-zsh-hook precmd _cudaenv_prompt
add-zsh-hook chpwd _cudaenv_prompt
_cudaenv_hook
