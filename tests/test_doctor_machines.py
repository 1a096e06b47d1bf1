"""Every fix doctor prints works when pasted: fake machines reproducing real reports.

Each machine has recorded nvidia-smi output, a real venv with torch's version.py and
dist-info, stub toolkits with a real nvcc banner, JIT cache entries and the reported
environment. doctor_rounds() runs the real CLI, applies the printed fix in bash in that
machine's shell, and runs doctor again: the finding the fix was for must be gone, and the
machine must end clean.
"""

from __future__ import annotations

import json

import pytest

from fakemachine import PLATFORMS, Machine, checks, doctor_rounds, ends_clean

HOOK = 'eval "$(cudaenv init - bash)"'


@pytest.fixture(params=PLATFORMS)
def platform(request):
    """Every machine twice: as an x86_64 and as an aarch64 machine (CUDAENV_MACHINE)."""
    return request.param


def seed(tmp_path, **kw):
    """The seed service: RTX PRO 6000 (sm_120), torch 2.9+cu130, FlashInfer 0.6, only nvcc 12.8."""
    m = Machine(tmp_path, flashinfer="0.6.1", triton="3.5.0", pip_cuda="13.0", **kw)
    m.cuda128 = m.system_toolkit("12.8.1")
    return m


def test_seed(tmp_path, platform):
    m = seed(tmp_path, platform=platform)
    cache = m.flashinfer_cache(m.cuda128)
    rounds = doctor_rounds(m, m.env(path_first=[m.cuda128 / "bin"]))
    first = checks(rounds[0])
    assert first["torch-toolkit"]["status"] == "error" and first["flashinfer-sm12"]["status"] == "error"
    # The first run already says the 12.8-built caches go after the switch, with the command.
    assert "built by 12.8 must be cleared after switching to 13.0" in first["jit-caches"]["verdict"]
    # ... and its fix makes the switch before clearing, not a clearing "after switching" alone,
    # and the pasted doctor --fix keeps --python.
    assert first["jit-caches"]["fix"] == (f"cudaenv install 13.0 && cudaenv local 13.0 && {HOOK} && "
                                          f"cudaenv doctor --fix --yes --quiet --python {m.python}")
    assert rounds[0].fix == (f"cudaenv install 13.0 && cudaenv local 13.0 && {HOOK} && "
                             f"cudaenv doctor --fix --yes --quiet --python {m.python}")
    assert len(rounds) == 2
    ends_clean(rounds)
    assert not cache.exists()


@pytest.mark.parametrize("bad", ["/nonexistent", "/dev/null"])
def test_seed_with_cuda_home_workaround(tmp_path, platform, bad):
    """The seed's workaround CUDA_HOME=/nonexistent: the fix must not export CUDA_HOME=<12.8>."""
    m = seed(tmp_path, platform=platform)
    rounds = doctor_rounds(m, m.env(path_first=[m.cuda128 / "bin"], CUDA_HOME=bad))
    first = checks(rounds[0])
    assert first["cuda-home"]["status"] == "error"
    assert str(m.cuda128) not in rounds[0].fix
    assert rounds[0].fix.startswith(f"unset CUDA_HOME && cudaenv install 13.0 && cudaenv local 13.0 && {HOOK}")
    ends_clean(rounds)


def test_local_without_hook_asks_for_the_hook(tmp_path, platform):
    """After `cudaenv local 13.0` in a shell without the hook, the fix is the hook, not `local` again."""
    m = seed(tmp_path, platform=platform)
    m.managed_toolkit("13.0.2")
    (m.proj / ".cuda-version").write_text("13.0\n")
    rounds = doctor_rounds(m, m.env(path_first=[m.cuda128 / "bin"]))
    assert rounds[0].report["exit_code"] == 2
    assert rounds[0].fix == HOOK
    ends_clean(rounds)


def test_another_stores_shims_on_path_are_not_this_hook(tmp_path, platform):
    """PATH membership is by entry: the shims of a store mounted under another prefix
    (/nfs<root>/shims) hold this store's shims directory as a substring, and are not it."""
    m = seed(tmp_path, platform=platform)
    m.managed_toolkit("13.0.2")
    (m.proj / ".cuda-version").write_text("13.0\n")
    elsewhere = f"/nfs{m.root}/shims"
    rounds = doctor_rounds(m, m.env(path_first=[m.cuda128 / "bin", elsewhere]))
    assert rounds[0].report["exit_code"] == 2
    assert rounds[0].fix == HOOK
    ends_clean(rounds)


@pytest.mark.parametrize("mode, why", [(0o644, "has a bin/nvcc that is not executable"), (None, "has no bin/nvcc")])
def test_cuda_home_whose_nvcc_cannot_run_is_an_error(tmp_path, platform, mode, why):
    """A CUDA_HOME with a bin/nvcc that cannot be run (copied without its mode) builds nothing."""
    m = seed(tmp_path, platform=platform)
    broken = m.system_toolkit("13.0.2")
    nvcc = broken / "bin" / "nvcc"
    if mode is None:
        nvcc.unlink()
    else:
        nvcc.chmod(mode)
    r = m.cli("doctor", "--json", "--python", m.python, env=m.env(path_first=[m.cuda128 / "bin"], CUDA_HOME=str(broken)))
    cuda_home = {c["id"]: c for c in __import__("json").loads(r.stdout)["checks"]}["cuda-home"]
    assert cuda_home["status"] == "error", cuda_home
    assert cuda_home["verdict"] == f"CUDA_HOME={broken} {why}", cuda_home


def test_seed_with_hook_active(tmp_path, platform):
    m = seed(tmp_path, platform=platform)
    rounds = doctor_rounds(m, m.env(path_first=[m.cuda128 / "bin"]), hook=True)
    assert rounds[0].fix.startswith("cudaenv install 13.0 && cudaenv local 13.0")
    assert HOOK not in rounds[0].fix
    ends_clean(rounds)


def test_vllm_21960_no_usr_local_cuda(tmp_path, platform):
    """vllm#21960: `/usr/local/cuda/bin/nvcc` not found: no CUDA_HOME, no nvcc on PATH, no /usr/local/cuda."""
    m = Machine(tmp_path, platform=platform, gpus="h100x2", torch="2.8.0+cu128")
    rounds = doctor_rounds(m, m.env())
    first = checks(rounds[0])
    assert first["torch-toolkit"]["status"] == "error"
    assert "would find no toolkit" in first["torch-toolkit"]["verdict"]
    assert rounds[0].fix == f"cudaenv install 12.8 && cudaenv local 12.8 && {HOOK}"
    ends_clean(rounds)


def test_deepspeed_2772_no_cuda_home_but_a_toolkit_selected(tmp_path, platform):
    """DeepSpeed#2772: no CUDA_HOME; cudaenv has 12.8 selected globally but the shell does not apply it.
    torch-toolkit must not report ok from cudaenv's own selection."""
    m = Machine(tmp_path, platform=platform, gpus="h100x2", torch="2.8.0+cu128")
    m.managed_toolkit("12.8.1")
    (m.root / "version").write_text("12.8\n")
    rounds = doctor_rounds(m, m.env())
    first = checks(rounds[0])
    assert first["torch-toolkit"]["status"] == "error" and "would find no toolkit" in first["torch-toolkit"]["verdict"]
    assert rounds[0].fix == HOOK
    ends_clean(rounds)


def test_flashinfer_3493_cuda_home_is_pip_headers(tmp_path, platform):
    """flashinfer#3493: CUDA_HOME at pip's nvidia/cu13 (headers, no nvcc), an older system nvcc on PATH."""
    m = seed(tmp_path, platform=platform)
    pip_root = m.site / "nvidia" / "cu13"
    rounds = doctor_rounds(m, m.env(path_first=[m.cuda128 / "bin"], CUDA_HOME=str(pip_root)))
    first = checks(rounds[0])
    assert first["cuda-home"]["status"] == "error" and "has no bin/nvcc" in first["cuda-home"]["verdict"]
    assert "pip-headers" not in first  # nobody adds pip's include directory to a build line
    assert rounds[0].fix.startswith(f"unset CUDA_HOME && cudaenv install 13.0 && cudaenv local 13.0 && {HOOK}")
    ends_clean(rounds)


@pytest.mark.parametrize("torch,dist,version", [
    ("2.9.0+cu130", "triton", "3.5.0"),
    # triton#8539's own setup: torch nightly pulls in pytorch-triton 3.5.0+git... from PyTorch's index.
    ("2.10.0.dev20251015+cu130", "pytorch_triton", "3.5.0+git7416ffcb"),
])
def test_triton_8539_spark_old_bundled_ptxas(tmp_path, platform, torch, dist, version):
    """triton#8539: DGX Spark (sm_121), Triton 3.5's bundled ptxas 12.8 cannot target sm_121a."""
    m = Machine(tmp_path, platform=platform, gpus="dgx-spark", torch=torch)
    m.install_triton(version, dist=dist)
    tk = m.managed_toolkit("13.0.2")
    (m.proj / ".cuda-version").write_text("13.0\n")
    rounds = doctor_rounds(m, m.env(), hook=True)
    assert checks(rounds[0])["triton-ptxas"]["status"] == "error"
    assert rounds[0].fix == f"export TRITON_PTXAS_PATH={tk}/bin/ptxas"
    ends_clean(rounds)


def test_the_one_command_is_the_first_errors_fix_in_report_order(tmp_path, platform):
    """Four errors, none a broken CUDA_HOME or a switch of toolkits: DGX Spark with Triton 3.5's
    bundled ptxas and a driver too old for the GPU, for torch's CUDA 13 and for the toolkit. The
    command printed last is the first error's fix in the report's order, and every error keeps its own."""
    import json

    from cudaenv.selecting.activation import toolkit_env

    m = Machine(tmp_path, platform=platform, gpus="dgx-spark", driver="570.124.06", torch="2.9.0+cu130", triton="3.5.0")
    tk = m.managed_toolkit("13.0.2")
    (m.proj / ".cuda-version").write_text("13.0\n")
    env = m.env()
    env.update(toolkit_env(tk, env))
    r = m.cli("doctor", "--json", "--python", m.python, env=env)
    report = json.loads(r.stdout)
    errors = [(c["id"], c["fix"]) for c in report["checks"] if c["status"] == "error"]
    assert errors == [("triton-ptxas", f"export TRITON_PTXAS_PATH={tk}/bin/ptxas"),
                      ("driver-gpu", "install NVIDIA driver >= 575.51.03"),
                      ("driver-torch", "install NVIDIA driver >= 580.65.06"),
                      ("driver", "install NVIDIA driver >= 580.65.06")], errors
    assert report["fix"] == errors[0][1]
    assert r.returncode == 2


def test_pytorch_73047_torch_cuda_differs_from_nvcc(tmp_path, platform):
    """pytorch#73047: torch cu128, nvcc on PATH is 11.8 -> major mismatch."""
    m = Machine(tmp_path, platform=platform, gpus="h100x2", torch="2.8.0+cu128")
    old = m.system_toolkit("11.8.0")
    rounds = doctor_rounds(m, m.env(path_first=[old / "bin"]))
    assert checks(rounds[0])["torch-toolkit"]["status"] == "error"
    assert rounds[0].fix == f"cudaenv install 12.8 && cudaenv local 12.8 && {HOOK}"
    ends_clean(rounds)


def test_stale_jit_caches(tmp_path, platform):
    """Caches built by 12.8 after the switch to 13.0: doctor --fix clears them."""
    m = seed(tmp_path, platform=platform)
    m.managed_toolkit("13.0.2")
    (m.proj / ".cuda-version").write_text("13.0\n")
    fi = m.flashinfer_cache(m.cuda128)
    te = m.torch_ext_cache(m.cuda128)
    rounds = doctor_rounds(m, m.env(), hook=True)
    assert checks(rounds[0])["jit-caches"]["status"] == "warn"
    assert rounds[0].fix == f"cudaenv doctor --fix --yes --quiet --python {m.python}"
    ends_clean(rounds)
    assert not fi.exists() and not te.exists()


def test_cudacxx_elsewhere(tmp_path, platform):
    """CUDACXX names another toolkit's nvcc: CMake builds with it."""
    m = Machine(tmp_path, platform=platform, gpus="h100x2", torch="2.8.0+cu128")
    tk = m.managed_toolkit("12.8.1")
    other = m.system_toolkit("12.6.0")
    (m.proj / ".cuda-version").write_text("12.8\n")
    env = m.env(path_first=[tk / "bin"], CUDA_HOME=str(tk), CUDACXX=str(other / "bin" / "nvcc"))
    rounds = doctor_rounds(m, env)
    first = checks(rounds[0])["cmake-finds"]
    # An error; with no hook here, the fix is the hook, which exports CUDACXX as it applies.
    assert first["status"] == "error" and first["fix"] == HOOK, first
    ends_clean(rounds)
    # The hook loaded (shims on PATH) but not run yet, as in a script: CUDA_HOME alone would
    # not do, CMake reads CUDACXX first. The fix sets it.
    env = m.env(path_first=[m.root / "shims", tk / "bin"], CUDA_HOME=str(tk), CUDACXX=str(other / "bin" / "nvcc"))
    rounds = doctor_rounds(m, env)
    first = checks(rounds[0])["cmake-finds"]
    assert first["status"] == "error" and first["fix"].startswith("export ") and \
        f"CUDACXX={tk}/bin/nvcc" in first["fix"], first
    ends_clean(rounds)


def test_driver_too_old_for_torch_build(tmp_path, platform):
    """torch cu130 on driver 550: no toolkit helps; torch itself cannot start."""
    m = Machine(tmp_path, platform=platform, gpus="h100x2", driver="550.54.15", torch="2.9.0+cu130")
    m.managed_toolkit("13.0.2")
    (m.proj / ".cuda-version").write_text("13.0\n")
    rounds = doctor_rounds(m, m.env(), hook=True)
    first = checks(rounds[0])
    assert first["driver-torch"]["status"] == "error"
    assert "cannot run torch's own CUDA 13.0 build" in first["driver-torch"]["verdict"]
    assert rounds[0].fix == "install NVIDIA driver >= 580.65.06"
    ends_clean(rounds)


def test_torch_cu121_on_driver_520_is_not_sent_to_11_8(tmp_path, platform):
    """Wrong major: torch cu121 on driver 520 must not get `cudaenv install 11.8`."""
    m = Machine(tmp_path, platform=platform, gpus="h100x2", driver="520.61.05", torch="2.5.1+cu121")
    old = m.system_toolkit("11.8.0")
    rounds = doctor_rounds(m, m.env(path_first=[old / "bin"]))
    assert "cudaenv install 11.8" not in (rounds[0].fix or "")
    assert rounds[0].fix.startswith("install NVIDIA driver >= ")
    assert checks(rounds[0])["driver-torch"]["status"] == "error"
    ends_clean(rounds)


def test_blackwell_on_driver_560(tmp_path, platform):
    """Driver 560 predates Blackwell (R570): an error, not a PTX warning."""
    m = Machine(tmp_path, platform=platform, driver="560.35.03", torch=None)
    tk = m.managed_toolkit("12.8.1")
    (m.proj / ".cuda-version").write_text("12.8\n")
    rounds = doctor_rounds(m, m.env(), hook=True)
    first = checks(rounds[0])
    assert first["driver-gpu"]["status"] == "error" and "sm_120" in first["driver-gpu"]["verdict"]
    assert rounds[0].fix == "install NVIDIA driver >= 570.26"
    assert tk.exists()
    ends_clean(rounds)


def test_conda_cuda_nvcc_without_cuda_home(tmp_path, platform):
    """conda's cuda-nvcc: nvcc on PATH, headers only under targets/x86_64-linux/include, no CUDA_HOME."""
    m = Machine(tmp_path, platform=platform, gpus="h100x2", torch="2.8.0+cu128")
    prefix = m.conda_toolkit("12.8.1")
    rounds = doctor_rounds(m, m.env(path_first=[prefix / "bin"], CONDA_PREFIX=str(prefix)))
    first = checks(rounds[0])
    assert first["toolkit-headers"]["status"] == "error"
    # conda's targets/ directory is named for the CPU: sbsa-linux on aarch64.
    targets = {"x86_64": "x86_64-linux", "aarch64": "sbsa-linux"}[platform]
    assert f"targets/{targets}/include" in first["toolkit-headers"]["explanation"]
    assert rounds[0].fix == f"cudaenv install 12.8 && cudaenv local 12.8 && {HOOK}"
    ends_clean(rounds)


def test_nvcc_wrapper_without_headers(tmp_path, platform):
    """An nvcc wrapper script on PATH: torch derives CUDA_HOME from its directory, which has no include/."""
    m = Machine(tmp_path, platform=platform, gpus="h100x2", torch="2.8.0+cu128")
    real = m.system_toolkit("12.8.1")
    wrap = m.wrapper_nvcc(real)
    rounds = doctor_rounds(m, m.env(path_first=[wrap / "bin"]))
    first = checks(rounds[0])
    assert first["toolkit-headers"]["status"] == "error" and str(wrap) in first["toolkit-headers"]["verdict"]
    ends_clean(rounds)


def test_mixed_h100_and_rtx5090(tmp_path, platform):
    """H100 + RTX 5090 with torch cu126: torch lacks sm_120, and 12.6 cannot target it."""
    m = Machine(tmp_path, platform=platform, gpus="mixed", torch="2.8.0+cu126")
    tk = m.system_toolkit("12.6.0")
    rounds = doctor_rounds(m, m.env(path_first=[tk / "bin"]))
    first = checks(rounds[0])
    assert first["torch-arch"]["status"] == "error"
    if platform == "x86_64":
        # The exact build: pip keeps an installed torch that satisfies `torch==2.8.*` (2.8.0+cu126 does).
        assert "pip install 'torch==2.8.0+cu128' --index-url https://download.pytorch.org/whl/cu128" in rounds[0].fix
    else:
        # cudaenv/data/torch_builds.json knows no aarch64 cu126 or cu128 build (aarch64: 2.11-2.14 cu130,
        # 2.15 cu132): 12.6 cannot compile sm_120, and the fix is the nearest aarch64 build that has both.
        assert "CUDA 12.6 cannot compile kernels for it" in first["torch-arch"]["explanation"], first["torch-arch"]
        assert rounds[0].fix.startswith("pip install 'torch==2.14.1+cu130' --index-url "
                                        "https://download.pytorch.org/whl/cu130 && cudaenv install 13.0 && "
                                        "cudaenv local 13.0"), rounds[0].fix
        assert "cu128" not in rounds[0].fix
    ends_clean(rounds)


def test_torch_arch_fix_names_another_torch_version(tmp_path, platform):
    """torch 2.6 has no build with sm_120 kernels: the fix names a torch version that has one."""
    m = Machine(tmp_path, platform=platform, torch="2.6.0+cu126")
    tk = m.system_toolkit("12.6.0")
    rounds = doctor_rounds(m, m.env(path_first=[tk / "bin"]))
    fix = checks(rounds[0])["torch-arch"]["fix"]
    if platform == "x86_64":
        assert fix and "pip install 'torch==2." in fix and "cu128" in fix and "cudaenv local 12.8" in fix
    else:
        # No aarch64 cu128 build in cudaenv/data/torch_builds.json: the newest aarch64 cu130 one
        # (2.14.1, sm_80 sm_90 sm_100 sm_110 sm_120) and its toolkit.
        assert fix and "pip install 'torch==2.14.1+cu130'" in fix and "cudaenv local 13.0" in fix, fix
        assert "cu128" not in fix
    ends_clean(rounds)


def test_v100_with_torch_cu130(tmp_path, platform):
    """V100 (sm_70) with torch cu130: only a 12.x torch and toolkit fit; the fix selects 12.8 too."""
    m = Machine(tmp_path, platform=platform, gpus="v100", torch="2.9.0+cu130")
    m.managed_toolkit("13.0.2")
    (m.proj / ".cuda-version").write_text("13.0\n")
    rounds = doctor_rounds(m, m.env(), hook=True)
    fix = rounds[0].fix
    if platform == "aarch64":
        # No aarch64 torch build cudaenv/data/torch_builds.json knows has sm_70 kernels (aarch64's
        # start at sm_80), so no torch to install: the error stays, with no fix that would not work.
        arch = checks(rounds[0])["torch-arch"]
        assert arch["status"] == "error" and arch["fix"] is None, arch
        assert "torch 2.9+cu130 (aarch64) lacks sm_70" in arch["verdict"], arch
        assert fix is None and len(rounds) == 1 and rounds[0].report["exit_code"] == 2, fix
        return
    assert "pip install 'torch==2.9.0+cu128' --index-url https://download.pytorch.org/whl/cu128" in fix
    assert "cudaenv local 12.8" in fix
    ends_clean(rounds)


def test_cuda_home_and_cuda_path_disagree(tmp_path, platform):
    m = Machine(tmp_path, platform=platform, gpus="h100x2", torch="2.9.0+cu130")
    a = m.system_toolkit("12.8.1")
    b = m.managed_toolkit("13.0.2")
    (m.proj / ".cuda-version").write_text("13.0\n")
    rounds = doctor_rounds(m, m.env(CUDA_HOME=str(a), CUDA_PATH=str(b)))
    first = checks(rounds[0])
    assert first["env-agree"]["status"] == "warn" and first["torch-toolkit"]["status"] == "error"
    ends_clean(rounds)


def test_old_toolkit_on_newer_driver_is_fine(tmp_path, platform):
    """Drivers are backward compatible: 470.82.01 runs a CUDA 10.1 toolkit (10.1 needs >= 418.39),
    though minor-version compatibility starts at 11.x."""
    m = Machine(tmp_path, platform=platform, gpus="v100", driver="470.82.01", torch=None)
    old = m.system_toolkit("10.1.243")
    env = m.env(path_first=[old / "bin"], CUDA_HOME=str(old))
    r = m.cli("doctor", "--json", "--python", m.python, env=env)
    driver = checks_of(r)["driver"]
    assert driver["status"] == "ok", driver
    assert "runs toolkit 10.1" in driver["verdict"]


def test_driver_predates_gpu_same_rule_as_resolver(tmp_path, platform):
    """driver-gpu in doctor and the resolver's finding are one rule: RTX 5090-class sm_120 on 550."""
    m = Machine(tmp_path, platform=platform, driver="550.54.15", torch=None)
    r = m.cli("doctor", "--json", "--python", m.python)
    gpu = checks_of(r)["driver-gpu"]
    assert gpu["status"] == "error" and gpu["fix"] == "install NVIDIA driver >= 570.26"
    res = json.loads(m.cli("resolve", "--json", "--python", m.python).stdout)
    assert [f["fix"] for f in res["findings"] if f["rule"] == "driver-gpu"] == ["install NVIDIA driver >= 570.26"]


def checks_of(r):
    return {c["id"]: c for c in json.loads(r.stdout)["checks"]}


def test_cudacxx_elsewhere_with_hook(tmp_path, platform):
    """CUDACXX at a 12.4 nvcc, 12.8 selected, hook active: CMake reads CUDACXX first, so the fix
    must change CUDACXX (exporting CUDA_HOME leaves CMake on 12.4 and loops)."""
    m = Machine(tmp_path, platform=platform, gpus="h100x2", torch="2.8.0+cu128")
    m.managed_toolkit("12.8.1")
    other = m.system_toolkit("12.4.1")
    (m.proj / ".cuda-version").write_text("12.8\n")
    # Set after the hook applied the selection (a later line of ~/.bashrc, a module load).
    rounds = doctor_rounds(m, m.env(), hook=True, setup=[f"export CUDACXX={other}/bin/nvcc"])
    first = checks(rounds[0])
    assert first["cmake-finds"]["status"] == "error"  # another toolkit than the selected one builds
    assert "CUDACXX" in first["cmake-finds"]["fix"]
    ends_clean(rounds)


def test_fix_names_a_release_a_source_offers(tmp_path, platform):
    """torch 1.10.2+cu113 with nvcc 10.1: no source offers 11.3 (redist starts at 11.4.2, PyPI's
    toolkit at 13.0); another 11.x minor satisfies torch (it only warns)."""
    m = Machine(tmp_path, platform=platform, gpus="v100", torch="1.10.2+cu113")
    old = m.system_toolkit("10.1.243")
    rounds = doctor_rounds(m, m.env(path_first=[old / "bin"]))
    assert checks(rounds[0])["torch-toolkit"]["status"] == "error"
    assert rounds[0].fix.startswith("cudaenv install 11.4 && cudaenv local 11.4"), rounds[0].fix
    assert "no source offers 11.3" in checks(rounds[-1])["torch-toolkit"]["verdict"]
    ends_clean(rounds)


@pytest.mark.parametrize("driver", ["580.65.06", "610.43.02"])
def test_bom_prefixed_pin_is_kept(tmp_path, platform, driver):
    """A .cuda-version saved with a UTF-8 BOM (Windows editors) for the installed 13.0 selects
    13.0 (every reader strips a leading BOM), so doctor has nothing to fix and never replaces a
    working pin with the newest release."""
    m = Machine(tmp_path, platform=platform, torch=None, driver=driver)
    m.managed_toolkit("13.0.2")
    pin = m.proj / ".cuda-version"
    pin.write_bytes(b"\xef\xbb\xbf13.0\n")
    m.proj = m.proj / "src"
    m.proj.mkdir()
    rounds = doctor_rounds(m, m.env())
    first = checks(rounds[0])
    assert first["selected-toolkit"]["status"] == "ok", first["selected-toolkit"]
    assert rounds[0].fix is None or "cudaenv local" not in rounds[0].fix, rounds[0].fix
    assert pin.read_bytes() == b"\xef\xbb\xbf13.0\n" and not (m.proj / ".cuda-version").exists()
    ends_clean(rounds)


@pytest.mark.parametrize("bad", ["/nonexistent"])
def test_broken_cuda_home_keeps_the_project_pin(tmp_path, platform, bad):
    """CUDA_HOME=/nonexistent in a directory pinned to 13.0 (installed): drop the variable, keep 13.0."""
    m = Machine(tmp_path, platform=platform, torch=None, driver="610.43.02")
    m.managed_toolkit("13.0.2")
    (m.proj / ".cuda-version").write_text("13.0\n")
    rounds = doctor_rounds(m, m.env(CUDA_HOME=bad))
    assert checks(rounds[0])["cuda-home"]["status"] == "error"
    assert "13.3" not in rounds[0].fix and "cudaenv local" not in rounds[0].fix, rounds[0].fix
    ends_clean(rounds)


def test_pasted_doctor_fix_keeps_python(tmp_path, platform):
    """The cache-clearing fix re-runs doctor: with --python it must judge the same Python."""
    m = seed(tmp_path, platform=platform)
    m.managed_toolkit("13.0.2")
    (m.proj / ".cuda-version").write_text("13.0\n")
    m.flashinfer_cache(m.cuda128)
    r = m.cli("doctor", "--json", "--python", m.python, env=m.env())
    assert checks_of(r)["jit-caches"]["fix"] == f"cudaenv doctor --fix --yes --quiet --python {m.python}"


def test_jetson_thor_driver_580_00(tmp_path, platform):
    """vllm#34470: Jetson Thor (sm_110) on JetPack 7 reports driver 580.00 and runs torch
    2.10.0+cu130 with CUDA available. Its L4T driver is numbered by branch: it neither predates
    Thor nor fails 13.x, and no desktop driver is the fix."""
    m = Machine(tmp_path, platform=platform, gpus="thor", driver="580.00", torch=None)
    # PyTorch's aarch64 CUDA 13 builds carry sm_110 (PyPI's 2.15.0+cu132 aarch64 wheel:
    # sm_80 sm_90 sm_100 sm_110 sm_120); doctor reads the installed torch's own list.
    m.install_torch("2.10.0+cu130", arch_list="sm_80 sm_90 sm_100 sm_110 sm_120")
    m.managed_toolkit("13.0.2")
    (m.proj / ".cuda-version").write_text("13.0\n")
    rounds = doctor_rounds(m, m.env(), hook=True)
    first = checks(rounds[0])
    assert first["driver-torch"]["status"] == "ok" and first["driver"]["status"] == "ok", first["driver-torch"]
    assert "driver-gpu" not in first
    assert "R38" in rounds[0].report["probe"]["tegra"]
    assert "580.65.06" not in (rounds[0].fix or "")
    ends_clean(rounds)


def test_jetson_orin_jetpack6_needs_jetpack_not_a_desktop_driver(tmp_path, platform):
    """Jetson Orin on JetPack 6 (driver 540.4.0, branch 540): a CUDA 13 toolkit is past its branch;
    the fix names JetPack, since no desktop driver installs on Tegra."""
    m = Machine(tmp_path, platform=platform, gpus="orin", driver="540.4.0", torch=None)
    tk = m.managed_toolkit("13.0.2")
    (m.proj / ".cuda-version").write_text("13.0\n")
    r = m.cli("doctor", "--json", "--python", m.python, env=m.env(path_first=[tk / "bin"], CUDA_HOME=str(tk)))
    drv = checks_of(r)["driver"]
    assert drv["status"] == "error" and drv["fix"].startswith("upgrade JetPack"), drv


def test_h100_triton_3_8_kernel_is_not_stale(tmp_path, platform):
    """Triton 3.8.0 on an H100: its get_ptxas uses ptxas-blackwell only from arch 100 (read from
    the 3.8.0 wheel), so sm_90 kernels come from its ptxas 12.9 (PTX ISA 8.8). A kernel it just
    built is fresh: doctor must not call it stale, and --fix must keep it."""
    m = Machine(tmp_path, platform=platform, gpus="h100x2", torch="2.9.0+cu130")
    m.install_triton("3.8.0", ptxas_release="12.9.1", blackwell_release="13.3.0")
    m.managed_toolkit("13.0.2")
    (m.proj / ".cuda-version").write_text("13.0\n")
    kernel = m.triton_cache("8.8", target="sm_90a")
    rounds = doctor_rounds(m, m.env(), hook=True, setup=["cudaenv doctor --fix --yes --quiet"])
    first = checks(rounds[0])
    assert first["jit-caches"]["status"] == "ok", first["jit-caches"]
    assert kernel.exists()
    ends_clean(rounds)



@pytest.mark.parametrize("own", [False, True])
def test_ld_library_path_shadows_torchs_bundled_libraries(tmp_path, platform, own):
    """unsloth#6905: LD_LIBRARY_PATH=/usr/local/cuda-12.1/lib64 with torch cu128, whose wheel loads
    libcudart and cuBLAS from site-packages/nvidia/*/lib: the 12.1 libraries win. Also the state
    cudaenv's own CUDAENV_LD_LIBRARY_PATH=1 leaves."""
    m = Machine(tmp_path, platform=platform, gpus="h100x2", torch="2.8.0+cu128")
    for lib in ("cuda_runtime/lib/libcudart.so.12", "cublas/lib/libcublas.so.12"):
        (m.site / "nvidia" / lib).parent.mkdir(parents=True, exist_ok=True)
        (m.site / "nvidia" / lib).write_bytes(b"\x7fELF")
    old = m.system_toolkit("12.1.1")
    (old / "lib64" / "libcudart.so.12.1.105").write_bytes(b"\x7fELF")
    tk = m.managed_toolkit("12.8.1")
    (m.proj / ".cuda-version").write_text("12.8\n")
    extra = dict(CUDAENV_LD_LIBRARY_PATH="1") if own else {}
    env = m.env(LD_LIBRARY_PATH=f"{old}/lib64:/opt/other/lib", **extra)
    rounds = doctor_rounds(m, env, hook=True)
    first = checks(rounds[0])
    assert first["ld-library-path"]["status"] == "error", first["ld-library-path"]
    assert f"{old}/lib64" in first["ld-library-path"]["verdict"]
    assert tk.exists()
    ends_clean(rounds)


def test_triton_older_than_the_rules_is_asked_live(tmp_path, platform):
    """Triton 3.4 predates every rule the data has (3.5 on): doctor asks it, as it asks a newer one,
    and says so when the installed Triton cannot answer (here a dist-info without a package)."""
    m = Machine(tmp_path, platform=platform, gpus="h100x2", torch="2.8.0+cu128")
    m.install_triton("3.4.0")
    m.managed_toolkit("12.8.1")
    (m.proj / ".cuda-version").write_text("12.8\n")
    r = m.cli("doctor", "--json", "--python", m.python, env=m.env())
    data = checks_of(r)["data-triton"]
    assert data["status"] == "warn" and "older than cudaenv's rules and could not be asked" in data["verdict"], data
