"""Error codes, strings, the per-thread last error and OpenRegError."""

import pickle
import threading

import pytest

import openreg_runtime as rt
from openreg_runtime import _C

# The values fixed by openreg.h.
HEADER_CODES = {
    "orSuccess": 0,
    "orErrorInvalidValue": 1,
    "orErrorMemoryAllocation": 2,
    "orErrorInitializationError": 3,
    "orErrorNoDevice": 100,
    "orErrorInvalidDevice": 101,
    "orErrorInvalidDevicePointer": 17,
    "orErrorInvalidMemcpyDirection": 21,
    "orErrorInvalidResourceHandle": 400,
    "orErrorNotReady": 600,
    "orErrorForkedProcess": 700,
    "orErrorNotSupported": 801,
    "orErrorAlreadyMapped": 208,
    "orErrorNotMapped": 211,
    "orErrorIpcInvalidHandle": 710,
    "orErrorIpcExporterGone": 711,
    "orErrorIpcHandleStale": 712,
}


def test_codes_match_header():
    assert _C._error_codes == HEADER_CODES


@pytest.mark.parametrize("name,code", sorted(HEADER_CODES.items()))
def test_every_code_has_name_and_string(name, code):
    assert _C._get_error_name(code) == name
    text = _C._get_error_string(code)
    assert text and text != "unrecognized error code"


def test_strings_are_distinct():
    strings = {_C._get_error_string(c) for c in HEADER_CODES.values()}
    assert len(strings) == len(HEADER_CODES)


def test_unknown_code():
    assert _C._get_error_name(12345) == "orErrorUnknown"
    assert _C._get_error_string(12345) == "unrecognized error code"


def test_last_error_peek_and_reset():
    _C._get_last_error()
    assert _C._get_last_error_message() == ""
    assert _C._set_device_status(99) == 101
    assert _C._peek_at_last_error() == 101
    assert _C._peek_at_last_error() == 101  # peeking does not reset
    message = _C._get_last_error_message()
    assert "device index 99 is out of range" in message and "valid indices 0.." in message
    # A later success does not clear the recorded error (cudart semantics).
    assert _C._set_device_status(0) == 0
    assert _C._peek_at_last_error() == 101
    assert _C._get_last_error() == 101
    assert _C._get_last_error() == 0
    assert _C._get_last_error_message() == ""


def test_last_error_is_per_thread():
    _C._get_last_error()
    assert _C._set_device_status(-1) == 101
    seen = []
    t = threading.Thread(target=lambda: seen.append(_C._peek_at_last_error()))
    t.start()
    t.join()
    assert seen == [0]
    assert _C._get_last_error() == 101


def test_exception_carries_code_name_and_detail():
    with pytest.raises(rt.OpenRegError) as info:
        rt.set_device(7)
    err = info.value
    assert isinstance(err, RuntimeError)
    assert err.code == 101 and err.name == "orErrorInvalidDevice"
    assert "device index 7 is out of range" in str(err)
    # Raising consumed the thread's error, as handling it in C would.
    assert _C._peek_at_last_error() == 0


def test_exception_pickles():
    err = rt.OpenRegError("orErrorNotReady: pending", 600, "orErrorNotReady")
    copy = pickle.loads(pickle.dumps(err))
    assert (str(copy), copy.code, copy.name) == (str(err), 600, "orErrorNotReady")
