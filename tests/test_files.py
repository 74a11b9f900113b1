"""c4jax.files.write_whole: a file is written whole or not at all."""

import os

import pytest

from c4jax import files


def test_text_and_bytes_are_written_and_replace_the_old_file(tmp_path):
    path = tmp_path / "a.txt"
    files.write_whole(path, "old\n")
    files.write_whole(path, b"new\n")
    assert path.read_bytes() == b"new\n" and os.listdir(tmp_path) == ["a.txt"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(tmp_path, monkeypatch):
    path = tmp_path / "a.txt"
    files.write_whole(path, "old\n")

    def no_rename(src, dst):
        raise OSError(28, "No space left on device", dst)

    monkeypatch.setattr(files.os, "replace", no_rename)
    with pytest.raises(OSError, match="No space left"):
        files.write_whole(path, "new\n")
    assert path.read_text() == "old\n" and os.listdir(tmp_path) == ["a.txt"]


def test_a_missing_folder_raises_and_writes_nothing(tmp_path):
    with pytest.raises(FileNotFoundError):
        files.write_whole(tmp_path / "no" / "a.txt", "x")
    assert os.listdir(tmp_path) == []


def test_a_device_is_written_directly():
    files.write_whole("/dev/null", "discarded")
    with pytest.raises(OSError, match="No space left"):
        files.write_whole("/dev/full", "x")
