"""The torch.backends entry point: on by default, off with TORCH_DEVICE_BACKEND_AUTOLOAD=0."""


def test_plain_import_torch_gives_openreg(run_python):
    result = run_python(
        """
        import sys, torch
        assert "openreg_torch" in sys.modules
        print(torch.ones(2, device="openreg").device, torch.openreg.device_count())
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["openreg:0", "2"]


def test_autoload_disabled_then_explicit_import(run_python):
    result = run_python(
        """
        import sys, torch
        assert "openreg_torch" not in sys.modules
        assert not hasattr(torch, "openreg")
        try:
            torch.device("openreg")
        except RuntimeError:
            pass
        else:
            raise AssertionError("openreg known without the backend")
        import openreg_torch
        print(torch.ones(1, device="openreg").device)
        """,
        env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "openreg:0"


def test_importing_the_package_before_torch(run_python):
    # `import openreg_torch` first: torch's own import then runs the entry points,
    # which must find openreg_torch._autoload on the half-imported module.
    result = run_python(
        """
        import openreg_torch
        import torch
        print(torch.ones(1, device="openreg").device)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "openreg:0"


def test_static_tls_stays_small():
    # The per-operator thread-locals are initial-exec (OPENREG_HOT_THREAD_LOCAL), so the
    # library's whole TLS segment comes out of the static reserve glibc keeps for
    # libraries loaded by dlopen (as autoload loads this one), shared with every library
    # loaded after it: a large thread_local here would make their dlopen fail.
    import re
    import subprocess
    from pathlib import Path

    import openreg_torch

    library = Path(openreg_torch.__file__).parent / "lib" / "libopenreg_torch.so"
    headers = subprocess.run(["readelf", "--program-headers", "--wide", str(library)],
                             capture_output=True, text=True, check=True, timeout=60).stdout
    tls = re.search(r"^\s*TLS\s+(?:0x[0-9a-f]+\s+){4}(0x[0-9a-f]+)", headers, re.MULTILINE)
    assert tls is not None, headers
    assert 0 < int(tls.group(1), 16) <= 256
