# cudaenv for direnv: `use cuda` in an .envrc applies a CUDA toolkit's environment
# (CUDA_HOME, CUDA_PATH, CUDAToolkit_ROOT, CUDACXX, PATH) while you are in that
# directory, and direnv removes it again when you leave.
#
# Install: copy this file to ~/.config/direnv/lib/cudaenv.sh, then in a project:
#
#   echo 'use cuda' > .envrc          # the toolkit .cuda-version selects
#   echo 'use cuda 12.8' > .envrc     # or a fixed one
#   direnv allow
#
# direnv reloads when .envrc, the .cuda-version it found or the global version
# file changes. The version is validated by cudaenv, never by this file.
use_cuda() {
    local out version_file
    if ! command -v cudaenv >/dev/null 2>&1; then
        log_error "use cuda: cudaenv is not on PATH"
        return 1
    fi
    if [ "$#" -gt 1 ]; then
        log_error "use cuda: at most one version, got: $*"
        return 1
    fi
    version_file=$(find_up .cuda-version) && watch_file "$version_file"
    watch_file "$(cudaenv root)/version"
    # Capture first: on an invalid or missing version, cudaenv prints one line
    # saying why, and nothing half-applied reaches this shell.
    out=$(cudaenv env --shell bash "$@") || return 1
    eval "$out"
    log_status "use cuda: CUDA_HOME=$CUDA_HOME"
}
