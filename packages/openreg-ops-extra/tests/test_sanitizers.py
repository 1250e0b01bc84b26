"""In the py311-sanitize tox env (OPENREG_EXPECT_SANITIZERS=1) openreg-ops-extra's kernels
are built with ASan and fatal UBSan and are the ones loaded; elsewhere this does not apply.
openreg-torch's tests/test_sanitizers.py proves findings are reported and fatal there."""

import os
import re
from pathlib import Path

import pytest

import openreg_ops_extra

pytestmark = pytest.mark.skipif(
    os.environ.get("OPENREG_EXPECT_SANITIZERS") != "1",
    reason="only in the py311-sanitize tox env (OPENREG_EXPECT_SANITIZERS=1)",
)


def test_extension_is_instrumented_and_loaded():
    library = Path(openreg_ops_extra._C.__file__)
    data = library.read_bytes()
    assert b"__asan_report_load" in data, f"{library} is not built with -fsanitize=address"
    assert re.search(rb"__ubsan_handle_\w+_abort", data), f"{library} lacks fatal UBSan checks"
    assert str(library.resolve()) in Path("/proc/self/maps").read_text()
