"""Which room of the package each test file covers, for running one room's tests.

The rooms are the package's subpackages (docs/architecture.md), `shell` (the
shell side in shims/: shims, hooks and the selection they share), plus `interface`
(the CLI, its commands and completions, run as a user types them) and `project`
(checks of the repository as a whole: docs, layout, types, packaging, mutations).
conftest.py marks every test with its file's room, so `pytest -m selecting` runs
the selection room's tests; docs/testing.md lists the command and what each
takes. A test file missing from this table fails `test_every_test_file_has_a_room`.
"""

ROOMS = {
    "foundation": (
        "test_config", "test_locking", "test_non_utf8_paths", "test_quoting", "test_store_modes",
        "test_versions",
    ),
    "selecting": (
        "test_auto", "test_build_modes", "test_companions", "test_discover", "test_hostcc",
        "test_one_name", "test_selection", "test_shared_roots", "test_shared_store",
        "test_store_root", "test_venv_binding",
    ),
    # The shell side: shims/ (the shims, the selection they share with Python, the hooks).
    "shell": (
        "test_hooks", "test_pyenv_parity", "test_selection_sh", "test_shell_start", "test_shell_trust",
        "test_shim_elsewhere", "test_shims",
    ),
    "diagnosing": (
        "test_aarch64_qemu", "test_api", "test_data", "test_doctor", "test_doctor_libraries", "test_doctor_roots",
        "test_doctor_machines", "test_doctor_truth", "test_gpu_detection", "test_isolation", "test_jitcache_deletes",
        "test_library_consumers", "test_live_consumers", "test_numba_cupy", "test_probe",
        "test_prometheus", "test_resolve", "test_resolver_truth", "test_torch_builds", "test_torch_fixes",
        "test_torch_wheel_archs", "test_torch_without_cuda",
    ),
    "exporting": ("test_modulefiles", "test_spack"),
    "installing": (
        "test_apt", "test_cache_races", "test_cache_trust", "test_deb", "test_disk_full",
        "test_download", "test_download_end", "test_extract", "test_extract_attacks",
        "test_fetch_limits", "test_install", "test_install_progress", "test_install_signals",
        "test_layout", "test_mirror", "test_mirror_s3", "test_pins", "test_pypi",
        "test_pypi_e2e", "test_redist", "test_secrets", "test_slow_servers", "test_sources", "test_tls",
    ),
    "interface": (
        "test_cli", "test_completions", "test_errors", "test_fast_path_imports",
        "test_hostile_cli", "test_integrations", "test_quickstart", "test_terminal_output",
    ),
    "project": (
        "test_docs", "test_habits", "test_hermetic", "test_hostile_readers", "test_import_graph",
        "test_mutation_survivors", "test_packaging", "test_rooms", "test_types",
    ),
}

ROOM_OF = {name: room for room, names in ROOMS.items() for name in names}
