"""The installed llama.cpp libraries were built portably: no AVX-512, no AMX instructions.

A build tuned to the build machine (``-march=native``) runs there and dies elsewhere: the
machine that compiled it advertised AMX, the one that ran it did not enable AMX tile state,
and the server died with SIGSEGV on ``ldtilecfg``. scripts/setup.sh builds for the x86-64-v3
baseline; this reads the machine code that was really installed, whatever this CPU supports.
"""

from __future__ import annotations

import importlib.util
import platform
import re
import shutil
import subprocess
from pathlib import Path

import pytest

X86_64 = platform.machine() in ("x86_64", "AMD64")

# Registers and mnemonics that only AVX-512 (EVEX) or AMX code uses. AVX2 code uses ymm and
# xmm registers without opmasks; an EVEX-encoded instruction on ymm still shows itself by an
# opmask (%k1..%k7) or by a mnemonic VEX does not have.
_FORBIDDEN = re.compile(
    r"%zmm\d|%tmm\d|%k[1-7]\b|\{%k|\b(ldtilecfg|sttilecfg|tileloadd|tdpb[su][su]d|tdpbf16ps|"
    r"vpternlog[dq]|vpermt2|vpermi2|vprol[dq]|vpror[dq]|vpcompress|vpexpand|vpdpbusds?|"
    r"vpdpwssds?|vcvtne2ps2bf16|vdpbf16ps|kmov[bwdq]|kortest)\b")


def _llama_libraries() -> list[Path]:
    spec = importlib.util.find_spec("llama_cpp")
    assert spec is not None and spec.origin, "llama-cpp-python is not installed (scripts/setup.sh)"
    libs = sorted(p for p in (Path(spec.origin).parent / "lib").glob("lib*.so*")
                  if p.is_file() and not p.is_symlink())
    assert libs, f"no shared libraries under {Path(spec.origin).parent / 'lib'}"
    return libs


@pytest.mark.slow
def test_llama_cpp_has_no_avx512_or_amx_code():
    objdump = shutil.which("objdump")
    assert objdump, "objdump (binutils) is needed to read the installed machine code"
    libs = _llama_libraries()
    assert any("ggml-cpu" in p.name for p in libs), [p.name for p in libs]
    for lib in libs:
        code = subprocess.run([objdump, "-d", "--no-show-raw-insn", str(lib)], check=True,
                              capture_output=True, text=True).stdout
        if X86_64 and "ggml-cpu" in lib.name:  # the baseline is AVX2, not plain SSE
            assert "%ymm" in code, f"{lib.name}: no AVX2 code at all?"
        found = sorted({m.group(0) for m in _FORBIDDEN.finditer(code)})
        assert not found, f"{lib.name} holds instructions beyond the x86-64-v3 baseline: {found[:10]}"


def test_the_forbidden_pattern_catches_avx512_and_amx():
    # The check itself must be able to fail: lines as objdump prints such instructions.
    for line in ("vmovups %zmm0,(%rax)", "vpaddd %ymm1,%ymm2,%ymm3{%k1}", "ldtilecfg (%rax)",
                 "vpternlogd $0x96,%ymm2,%ymm1,%ymm0", "kmovw %eax,%k1"):
        assert _FORBIDDEN.search(line), line
    assert not _FORBIDDEN.search("vfmadd231ps %ymm1,%ymm2,%ymm0")
