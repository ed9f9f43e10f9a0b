# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The on-disk cache of runtime-compiled GPU code (src/gpu/kernel_cache.cpp, plain C++): built
here with g++ beside a small C shim and driven through ctypes. A stored binary is read back;
a missing, foreign, truncated or other-key file reads as a miss; writes are atomic (no
temporary file left); a folder that cannot be created leaves the cache off with one warning;
the folder comes from GRAPHKILN_KERNEL_CACHE ("off" disables), else XDG_CACHE_HOME or ~/.cache."""

from __future__ import annotations

import ctypes
import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]

SHIM = r"""
#include <cstdio>
#include <cstring>
#include <string>
#include "gpu/kernel_cache.hpp"
using graphkiln::gpu::KernelCache;
extern "C" int gk_store(const char* dir, const char* key, const char* data, long n) {
  return KernelCache(dir).store(key, std::string(data, n)) ? 1 : 0;
}
extern "C" long gk_load(const char* dir, const char* key, char* out, long cap) {
  std::string binary;
  if (!KernelCache(dir).load(key, &binary)) return -1;
  if (static_cast<long>(binary.size()) > cap) return -2;
  std::memcpy(out, binary.data(), binary.size());
  return static_cast<long>(binary.size());
}
extern "C" void gk_path(const char* dir, const char* key, char* out, long cap) {
  std::snprintf(out, cap, "%s", KernelCache(dir).path_of(key).c_str());
}
extern "C" void gk_default_dir(char* out, long cap) {
  std::snprintf(out, cap, "%s", graphkiln::gpu::kernel_cache_dir().c_str());
}
"""


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    compiler = shutil.which("g++")
    if compiler is None:
        pytest.skip("no g++ to build src/gpu/kernel_cache.cpp")
    folder = tmp_path_factory.mktemp("cache_lib")
    shim = folder / "shim.cpp"
    shim.write_text(SHIM)
    lib = folder / "libcache.so"
    subprocess.run(
        [
            compiler,
            "-std=c++17",
            "-O1",
            "-shared",
            "-fPIC",
            f"-I{ROOT / 'src'}",
            "-o",
            str(lib),
            str(shim),
            str(ROOT / "src/gpu/kernel_cache.cpp"),
        ],
        check=True,
    )
    return ctypes.CDLL(str(lib))


def _store(lib, folder, key: str, data: bytes) -> bool:
    return bool(lib.gk_store(str(folder).encode(), key.encode(), data, len(data)))


def _load(lib, folder, key: str) -> bytes | None:
    out = ctypes.create_string_buffer(1 << 16)
    n = lib.gk_load(str(folder).encode(), key.encode(), out, len(out))
    return None if n < 0 else out.raw[:n]


def _path(lib, folder, key: str) -> pathlib.Path:
    out = ctypes.create_string_buffer(4096)
    lib.gk_path(str(folder).encode(), key.encode(), out, len(out))
    return pathlib.Path(out.value.decode())


def test_gpu_jit_cache_hit_miss_and_atomic_write(cache, tmp_path):
    folder = tmp_path / "a" / "kernels"  # created on the first store
    binary = bytes(range(256)) * 7 + b"\x00 tail"
    assert _load(cache, folder, "key one") is None
    assert _store(cache, folder, "key one", binary)
    assert _load(cache, folder, "key one") == binary
    assert _load(cache, folder, "key two") is None
    assert os.listdir(folder) == [_path(cache, folder, "key one").name]  # no temporary left
    assert _store(cache, folder, "key one", b"newer")  # replaced in place
    assert _load(cache, folder, "key one") == b"newer"


def test_gpu_jit_cache_damaged_or_foreign_files_are_misses(cache, tmp_path):
    binary = b"\x7fELF" + os.urandom(3000)
    assert _store(cache, tmp_path, "the key", binary)
    path = _path(cache, tmp_path, "the key")
    whole = path.read_bytes()
    for damaged in (whole[: len(whole) // 2], whole[:10], b"", b"garbage" * 100, whole + b"extra"):
        path.write_bytes(damaged)
        assert _load(cache, tmp_path, "the key") is None
    # a valid file of another key where this key's file would be (a hash collision)
    assert _store(cache, tmp_path, "other key", binary)
    shutil.copy(_path(cache, tmp_path, "other key"), path)
    assert _load(cache, tmp_path, "the key") is None
    assert _load(cache, tmp_path, "other key") == binary


def test_gpu_jit_cache_unwritable_folder_warns_once(cache, tmp_path, capfd):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    folder = blocker / "kernels"  # cannot be created, even as root
    assert not _store(cache, folder, "k", b"data")
    assert not _store(cache, folder, "k2", b"data")
    assert _load(cache, folder, "k") is None
    err = capfd.readouterr().err
    assert err.count("not cached") == 1 and str(folder) in err


def test_gpu_jit_cache_folder_from_the_environment(cache, monkeypatch, tmp_path):
    def default() -> str:
        out = ctypes.create_string_buffer(4096)
        cache.gk_default_dir(out, len(out))
        return out.value.decode()

    monkeypatch.setenv("GRAPHKILN_KERNEL_CACHE", str(tmp_path / "mine"))
    assert default() == str(tmp_path / "mine")
    monkeypatch.setenv("GRAPHKILN_KERNEL_CACHE", "off")
    assert default() == ""
    assert not _store(cache, "", "k", b"data")  # no folder: no cache
    monkeypatch.delenv("GRAPHKILN_KERNEL_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default() == str(tmp_path / "xdg" / "graphkiln" / "kernels")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default() == str(tmp_path / "home" / ".cache" / "graphkiln" / "kernels")
