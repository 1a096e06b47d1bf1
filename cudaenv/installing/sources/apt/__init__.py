"""The apt source: NVIDIA's CUDA apt repository, read by apt itself, without root.

    repository.py  which repository (distro, arch, URL) and the keyring that verifies it
    index.py       its Packages index, parsed and validated
    state.py       the private apt state per repository and keyring ($CUDAENV_ROOT/apt/<key>/)
    backends.py    python-apt's apt_pkg, or apt-get/apt-cache, driving apt on that state
    source.py      AptSource: releases and plans, as every source offers them
    system.py      install --system's apt-get run into /usr/local/cuda-X.Y (see system_install.py)

Environment: CUDAENV_APT_REPO (repository URL), CUDAENV_APT_KEYRING (the
keyring apt verifies it with), CUDAENV_APT_DISTRO (debian12, ubuntu2204,
ubuntu2404; default from /etc/os-release), CUDAENV_APT_BACKEND (python|cli),
CUDAENV_PYTHON_APT_PATH (directory holding apt_pkg*.so).
"""

from .backends import backend_for, load_apt_pkg  # noqa: F401
from .index import Index, parse_stanzas  # noqa: F401
from .repository import DEFAULT_BASE, DISTROS, host_arch, host_distro, keyring_path, repo_url  # noqa: F401
from .source import PACKAGE_STEMS, SOURCE, AptSource  # noqa: F401
from .state import AptState  # noqa: F401
