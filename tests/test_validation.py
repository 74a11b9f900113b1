"""The boundary checks every public function uses (``c4jax.validation``): one
message shape, ``<name> must be <allowed>; got <value>``."""

from __future__ import annotations

import numpy as np
import pytest

from c4jax.validation import check_choice, check_int, check_number


@pytest.mark.parametrize("value, kwargs, expected", [
    (3, dict(lo=1), 3),
    (np.int64(7), dict(lo=1, hi=9), 7),
    (None, dict(lo=0, optional=True), None),
    (4, dict(lo=2, even=True), 4),
])
def test_check_int_returns_plain_ints(value, kwargs, expected):
    out = check_int("n", value, **kwargs)
    assert out == expected and type(out) is type(expected)


@pytest.mark.parametrize("value, kwargs, message", [
    (True, dict(lo=1), "n must be an int >= 1; got True"),
    (1.0, dict(lo=1), "n must be an int >= 1; got 1.0"),
    ("3", dict(lo=1), "n must be an int >= 1; got '3'"),
    (0, dict(lo=1, hi=9), "n must be an int in 1..9; got 0"),
    (2**31, dict(lo=1, hi=2**30), "n must be an int in 1..1,073,741,824; got 2147483648"),
    (3, dict(lo=2, even=True), "n must be an even int >= 2; got 3"),
    (-1, dict(lo=0, optional=True), "n must be None or an int >= 0; got -1"),
    (None, dict(lo=0), "n must be an int >= 0; got None"),
    (5, dict(hi=4, note="(bytes)"), r"n must be an int <= 4 \(bytes\); got 5"),
])
def test_check_int_refuses_with_one_message_shape(value, kwargs, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        check_int("n", value, **kwargs)


def test_an_array_is_named_as_one():
    import jax.numpy as jnp

    for value in (jnp.int32(10), np.array([3])):
        with pytest.raises(ValueError, match=r"^n must be an int >= 1; got .*\(an array: pass a plain Python value, "
                                             r"fixed when the program is compiled\)$"):
            check_int("n", value, lo=1)
    with pytest.raises(ValueError, match=r"\(an array: pass a plain Python value"):
        check_number("x", jnp.float32(0.5), 0)


@pytest.mark.parametrize("value, kwargs, message", [
    (0, dict(lo=0, lo_open=True), "x must be a finite number > 0; got 0"),
    (float("nan"), dict(), "x must be a finite number; got nan"),
    (float("inf"), dict(lo=0), "x must be a finite number >= 0; got inf"),
    (1.5, dict(lo=0, hi=1), r"x must be a number in \[0, 1\]; got 1.5"),
    (False, dict(), "x must be a finite number; got False"),
])
def test_check_number_refuses_with_one_message_shape(value, kwargs, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        check_number("x", value, **kwargs)


def test_check_number_returns_floats():
    assert check_number("x", np.float32(0.5), 0, 1) == 0.5 and type(check_number("x", 2, 0)) is float


def test_check_choice():
    assert check_choice("c", "a", ("a", "b")) == "a"
    assert check_choice("c", None, ("a",), optional=True) is None
    for bad in ("z", 1, None, ["a"]):
        with pytest.raises(ValueError, match=r"^c must be one of 'a', 'b'; got "):
            check_choice("c", bad, ("a", "b"))
