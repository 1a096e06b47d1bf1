"""Runs inside the TARGET Python (never imported by cudaenv itself): asks one consumer's
own code which toolkit, nvcc, ptxas and GPU targets it would use, and prints one JSON
object after a marker line.

    python -I -E -s -c "<this file's text>" CONSUMER '[120, 90]'   (cudaenv.foundation.programs.run_python,
                                                            in a private empty directory)

The consumer is imported the way it imports itself. When that fails (a --no-deps
install, a torch that cannot load here, no GPU stack), the few functions that decide
are read from the consumer's own source file with `ast` and run with only the standard
library around them, so the answer is still the consumer's code, not cudaenv's model.
Nothing here needs a GPU. Standard library only, Python 3.8 syntax.
"""

import ast
import functools
import importlib.util
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import types

MARKER = "@@cudaenv-live-probe@@"


def package_dir(top):
    """A top-level package's directory, found without importing (running) it."""
    spec = importlib.util.find_spec(top)
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def run_functions(path, names, namespace):
    """Define the named functions (`name` or `Class.method`) of a source file in `namespace`,
    decorators stripped (they only cache). Returns the namespace."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    found = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in names:
            found.append(node)
        elif isinstance(node, ast.ClassDef):
            for sub in node.body:
                if isinstance(sub, ast.FunctionDef) and node.name + "." + sub.name in names:
                    found.append(sub)
    missing = set(n.split(".")[-1] for n in names) - set(n.name for n in found)
    if missing:
        raise LookupError("%s has no %s" % (path, ", ".join(sorted(missing))))
    for node in found:
        node.decorator_list = []
    module = ast.Module(body=[*found], type_ignores=[])
    exec(compile(module, path, "exec"), namespace)
    return namespace


def fake_module(name, namespace):
    """Make `from <name> import f` inside a consumer's function find our namespace."""
    parts = name.split(".")
    for i in range(1, len(parts)):
        sys.modules.setdefault(".".join(parts[:i]), types.ModuleType(".".join(parts[:i])))
    mod = types.ModuleType(name)
    mod.__dict__.update(namespace)
    sys.modules[name] = mod


def torch_version_cuda():
    """torch.version.cuda, from torch/version.py's text (importing torch may be impossible here)."""
    d = package_dir("torch")
    if d is None:
        return None
    try:
        with open(os.path.join(d, "version.py")) as f:
            m = re.search(r"^cuda\s*(?::[^=\n]*)?=\s*(?:'([^']*)'|\"([^\"]*)\"|None)", f.read(), re.M)
    except OSError:
        return None
    return (m.group(1) or m.group(2)) if m else None


def torch_namespace():
    try:
        import torch  # noqa: F401 - the real one, when it loads
        return torch
    except Exception:
        return types.SimpleNamespace(version=types.SimpleNamespace(cuda=torch_version_cuda()))


class SimpleVersion(tuple):
    """packaging.version.Version's ordering for plain X.Y, when packaging is not installed."""

    text = ""  # set per instance in __new__

    def __new__(cls, text):
        obj = tuple.__new__(cls, tuple(int(p) for p in str(text).split(".")))
        obj.text = str(text)
        return obj

    def __str__(self):
        return self.text


def version_class():
    try:
        from packaging.version import Version
        return Version
    except Exception:
        return SimpleVersion


def stdlib_namespace(**extra):
    logger = logging.getLogger("cudaenv-live-probe")
    ns = {"os": os, "re": re, "shutil": shutil, "subprocess": subprocess, "functools": functools,
          "logging": logging, "logger": logger, "sys": sys}
    ns.update(extra)
    return ns


def banner(tool):
    """("13.4", "13.4.59") from an nvcc's or ptxas's --version, as torch, FlashInfer and SGLang
    parse `release X.Y` (Triton keeps only that; the component is for the report)."""
    try:
        out = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None, None
    m = re.search(r"release (\d+\.\d+)(?:, V(\d+\.\d+\.\d+))?", out)
    return (m.group(1), m.group(2)) if m else (None, None)


def nvcc_release(nvcc):
    return banner(nvcc)[0]


def answer(fn, *args):
    try:
        return {"value": fn(*args)}
    except Exception as e:  # the consumer's own error is the answer
        return {"error": "%s: %s" % (type(e).__name__, e)}


def version_of(dist_names):
    try:
        from importlib import metadata
    except ImportError:
        return None
    for name in dist_names:
        try:
            return metadata.version(name)
        except Exception:
            continue
    return None


# --- torch ---------------------------------------------------------------------------------------

def probe_torch(archs):
    import torch
    import torch.utils.cpp_extension as ce

    home = ce._find_cuda_home()
    res = {"mode": "import", "version": torch.__version__, "cuda_home": home,
           "module_cuda_home": ce.CUDA_HOME, "torch_cuda": torch.version.cuda}
    if not home:
        res["check"] = {"status": "error", "message": "CUDA_HOME not found (torch.utils.cpp_extension)"}
        return res
    res["nvcc_release"] = nvcc_release(os.path.join(home, "bin", "nvcc"))
    # The check cpp_extension runs before building an extension. It reads the module's
    # CUDA_HOME, which a build without CUDA leaves None; the compiler-ABI part is not ours.
    ce.CUDA_HOME = home
    os.environ["TORCH_DONT_CHECK_COMPILER_ABI"] = "1"
    warned = []

    class Catch(logging.Handler):
        def emit(self, record):
            warned.append(record.getMessage())

    ce.logger.addHandler(Catch())
    try:
        from torch.torch_version import TorchVersion
        ce._check_cuda_version("c++", TorchVersion("0.0"))
        res["check"] = {"status": "warning", "message": warned[-1]} if warned else {"status": "ok"}
    except RuntimeError as e:
        msg = e.args[0] % tuple(e.args[1:]) if len(e.args) > 1 and "%s" in str(e.args[0]) else str(e)
        res["check"] = {"status": "error", "message": msg}
    except (OSError, ValueError) as e:
        res["check"] = {"status": "error", "message": str(e)}
    return res


# --- FlashInfer ----------------------------------------------------------------------------------

def flashinfer_functions():
    try:
        from flashinfer.compilation_context import CompilationContext
        from flashinfer.jit import cpp_ext
        return "import", cpp_ext.get_cuda_path, cpp_ext.get_cuda_version, CompilationContext._normalize_cuda_arch
    except Exception as e:
        why = "%s: %s" % (type(e).__name__, e)
    d = package_dir("flashinfer")
    if d is None:
        raise ImportError("flashinfer is not installed in this Python")
    ns = run_functions(os.path.join(d, "jit", "cpp_ext.py"),
                       ["get_cuda_path", "get_cuda_version", "is_cuda_version_at_least"],
                       stdlib_namespace(Version=version_class(), torch=torch_namespace()))
    fake_module("flashinfer.jit.cpp_ext", ns)
    cc = run_functions(os.path.join(d, "compilation_context.py"), ["CompilationContext._normalize_cuda_arch"],
                       stdlib_namespace())
    return "source (import failed: %s)" % why, ns["get_cuda_path"], ns["get_cuda_version"], cc["_normalize_cuda_arch"]


def probe_flashinfer(archs):
    mode, get_cuda_path, get_cuda_version, normalize = flashinfer_functions()
    res = {"mode": mode, "version": version_of(["flashinfer-python", "flashinfer"])}
    res["cuda_path"] = answer(get_cuda_path)
    v = answer(get_cuda_version)
    res["cuda_version"] = {"value": str(v["value"])} if "value" in v else v
    res["archs"] = {}
    for arch in archs:
        major, minor = divmod(arch, 10)
        got = answer(normalize, major, minor)
        res["archs"][str(arch)] = ({"target": "%d%s" % tuple(got["value"])} if "value" in got else got)
    return res


# --- Triton ---

def probe_triton(archs):
    import triton
    from triton import knobs
    from triton.backends.nvidia import compiler

    res = {"mode": "import", "version": triton.__version__, "archs": {}}
    tools = {}
    for name, desc in vars(type(knobs.nvidia)).items():
        if hasattr(desc, "default_path") and hasattr(desc, "key") and "ptxas" in name:
            tools[name] = desc
    for arch in archs:
        try:
            if hasattr(compiler, "get_ptxas"):
                tool = compiler.get_ptxas(arch)
            else:  # before 3.6 one ptxas served every arch
                tool = knobs.nvidia.ptxas
        except Exception as e:
            res["archs"][str(arch)] = {"error": "%s: %s" % (type(e).__name__, e)}
            continue
        entry = {"ptxas": tool.path, "release": tool.version, "component": banner(tool.path)[1]}
        for name, desc in tools.items():
            if getattr(knobs.nvidia, name) == tool:
                entry["env"] = desc.key
                entry["env_value"] = os.environ.get(desc.key)
                entry["bundled"] = os.path.realpath(tool.path) == os.path.realpath(desc.default_path)
                break
        if hasattr(compiler, "ptx_get_version"):
            isa = compiler.ptx_get_version(tool.version)
            entry["ptx_isa"] = "%d.%d" % (isa // 10, isa % 10)
        res["archs"][str(arch)] = entry
    return res


# --- SGLang --------------------------------------------------------------------------------------

def sglang_functions():
    try:
        from sglang.kernels.jit.utils import arch as arch_mod
        from sglang.kernels.jit.utils.compile import toolchain
        return ("import", toolchain.cuda_home, toolchain.cuda_stubs_dir, arch_mod._jit_cuda_version,
                arch_mod._cuda_arch_suffix)
    except Exception as e:
        why = "%s: %s" % (type(e).__name__, e)
    d = package_dir("sglang")
    if d is None:
        raise ImportError("sglang is not installed in this Python")
    torch = torch_namespace()
    common = run_functions(os.path.join(d, "srt", "utils", "common.py"), ["get_cuda_version"],
                           stdlib_namespace(torch=torch))
    fake_module("sglang.srt.utils.common", common)
    jit = os.path.join(d, "kernels", "jit", "utils")
    ns = run_functions(os.path.join(jit, "compile", "toolchain.py"), ["cuda_home", "cuda_stubs_dir"],
                       stdlib_namespace(torch=torch))
    run_functions(os.path.join(jit, "arch.py"), ["_jit_cuda_version", "_cuda_arch_suffix"], ns)
    return ("source (import failed: %s)" % why, ns["cuda_home"], ns["cuda_stubs_dir"], ns["_jit_cuda_version"],
            ns["_cuda_arch_suffix"])


def probe_sglang(archs):
    mode, cuda_home, stubs, jit_version, suffix = sglang_functions()
    res = {"mode": mode, "version": version_of(["sglang"])}
    home = answer(cuda_home)
    res["cuda_home"] = home
    if "value" in home:
        res["nvcc"] = os.path.join(home["value"], "bin", "nvcc")
        res["nvcc_runs"] = nvcc_release(res["nvcc"]) is not None
    res["stubs_dir"] = answer(stubs)
    v = answer(jit_version)
    res["jit_cuda_version"] = {"value": ".".join(map(str, v["value"]))} if "value" in v else v
    res["archs"] = {}
    for arch in archs:
        major, minor = divmod(arch, 10)
        got = answer(suffix, major, minor)
        res["archs"][str(arch)] = {"target": "%d%d%s" % (major, minor, got["value"])} if "value" in got else got
    return res


PROBES = {"torch": probe_torch, "flashinfer": probe_flashinfer, "triton": probe_triton, "sglang": probe_sglang}


def main(argv):
    consumer, archs = argv[0], [int(a) for a in json.loads(argv[1])]
    # Consumers log while they look (torch warns when no CUDA runtime is found): keep stdout ours.
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    try:
        result = PROBES[consumer](archs)
    except Exception as e:
        result = {"unavailable": "%s: %s" % (type(e).__name__, e)}
    sys.stdout.write("\n" + MARKER + json.dumps(result) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
